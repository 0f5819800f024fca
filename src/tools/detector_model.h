#pragma once
/// Loads a detector for `yoloc run` / `yoloc eval` / `yoloc bench`: a compiled `.ycm` artifact
/// (run by the runtime's executor, everything from its manifest), or an ONNX model: import
/// (fixing dynamic input sizes), family and class names from the metadata, and a Detector
/// running the optimized graph on the reference executor.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detect/pipeline.h"
#include "ir/graph.h"
#include "runtime/engine.h"
#include "tools/artifact_options.h"

namespace yoloc::tools {

struct DetectorModelOptions {
  std::string path;
  std::string family;  ///< --family; empty: from the model
  int imgsz = 0;       ///< --imgsz; 0: the model's static size, metadata imgsz, else 640
  float conf = 0.25f;
  float iou = 0.45f;
  int max_det = 300;
  int batch = 1;    ///< images per run (compile and bench; detection runs take 1)
  /// ONNX models on the reference executor: "auto" computes as the model says, "fp32" rewrites
  /// quantized layers to float as `compile --target cpu` does.
  std::string precision = "auto";
  /// compile / tune --io-precision (cuda): "fp32" (also when empty) keeps float32 inputs and
  /// outputs; "fp16" / "bf16" (the --precision's type) stores them narrow too.
  std::string io_precision;
  /// compile / tune --lanes (cuda): the concurrent lanes the batch is split into
  /// (CudaCompileOptions::lanes, cuda_lanes): a number dividing the batch. Empty: not given (1;
  /// the cpu target refuses it).
  std::string lanes;
  int threads = 0;  ///< --threads for artifacts; 0: the machine's hardware threads
  int device = 0;   ///< --device: the GPU of a CUDA artifact
  ArtifactLoadOptions load;  ///< --trust, --max-memory: how a .ycm is loaded
};

/// An imported ONNX detector before optimization: the graph with its input dims fixed, the
/// pipeline configuration and the class names.
struct ImportedDetector {
  std::unique_ptr<Graph> graph;
  detect::DetectorConfig config;
  std::vector<std::string> names;
};

struct DetectorModel {
  std::shared_ptr<const Graph> graph;                ///< ONNX models: the optimized graph
  std::shared_ptr<runtime::Engine> engine;           ///< artifacts: what runs the network
  std::unique_ptr<detect::Detector> detector;
  std::vector<std::string> names;
};

/// Makes the values named `names` the graph's outputs (and drops what they do not need);
/// raises a UserError naming a value the model `where` lacks.
void select_outputs(Graph& g, const std::vector<std::string>& names, const std::string& where);

/// True when `path` names a compiled artifact (by its .ycm extension).
bool is_artifact_path(const std::string& path);

/// Imports an ONNX detector with batch `options.batch`. Raises a UserError for a model that is
/// not a one-image-input detector, an --imgsz that a static model cannot take (or that is not
/// a positive multiple of the stride), a --batch that a static model cannot take, or a family
/// that cannot be told (see detect_family).
ImportedDetector import_detector(const DetectorModelOptions& options);

/// Loads the artifact or imports the model and builds its detector. Raises a UserError for a model that is not a
/// one-image-input detector, an --imgsz that a static model cannot take (or that is not a
/// positive multiple of the stride), or a family that cannot be told (see detect_family).
DetectorModel load_detector_model(const DetectorModelOptions& options);

/// Adds the arguments every detector command takes to `c`: the model, --imgsz and --family.
/// Commands that run the model add add_artifact_load_options(c, options.load) too.
void add_detector_model_options(CLI::App& c, DetectorModelOptions& options);
/// Adds --io-precision (options.io_precision) to compile and tune (the tasks of narrow I/O
/// differ).
void add_io_precision_option(CLI::App& c, DetectorModelOptions& options);
/// Adds --lanes (options.lanes) to compile and tune (the tasks are one lane's).
void add_lanes_option(CLI::App& c, DetectorModelOptions& options);

}  // namespace yoloc::tools
