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

#include "compiler/detector_import.h"
#include "detect/pipeline.h"
#include "ir/graph.h"
#include "runtime/engine.h"
#include "yoloc/compiler.h"
#include "tools/artifact_options.h"

namespace yoloc::tools {

/// A model path and how to read it: what the compiler takes (yoloc::ModelOptions) and, for
/// artifacts, the runtime's threads and device.
struct DetectorModelOptions : ModelOptions {
  std::string path;
  int threads = 0;  ///< --threads for artifacts; 0: the machine's hardware threads
  int device = 0;   ///< --device: the GPU of a CUDA artifact
  ArtifactLoadOptions load;  ///< --trust, --max-memory: how a .ycm is loaded
};

using compiler::ImportedDetector;
using compiler::is_artifact_path;
using compiler::select_outputs;

struct DetectorModel {
  std::shared_ptr<const Graph> graph;                ///< ONNX models: the optimized graph
  std::shared_ptr<runtime::Engine> engine;           ///< artifacts: what runs the network
  std::unique_ptr<detect::Detector> detector;
  std::vector<std::string> names;
};

/// Loads the artifact or imports the model and builds its detector. Raises a UserError for a model that is not a
/// one-image-input detector, an --imgsz that a static model cannot take (or that is not a
/// positive multiple of the stride), or a family that cannot be told (see detect_family).
DetectorModel load_detector_model(const DetectorModelOptions& options);

/// Adds the arguments every detector command takes to `c`: the model, --imgsz and --family.
/// Commands that run the model add add_artifact_load_options(c, options.load) too.
void add_detector_model_options(CLI::App& c, DetectorModelOptions& options);
/// Adds --threads and --device (how an artifact runs) to a command that runs a detector.
void add_runtime_options(CLI::App& c, DetectorModelOptions& options);
/// Adds --io-precision (options.io_precision) to compile and tune (the tasks of narrow I/O
/// differ).
void add_io_precision_option(CLI::App& c, DetectorModelOptions& options);
/// Adds --lanes (options.lanes) to compile and tune (the tasks are one lane's).
void add_lanes_option(CLI::App& c, DetectorModelOptions& options);

}  // namespace yoloc::tools
