#pragma once
/// Loads a detector for `yoloc run` / `yoloc eval`: a compiled `.ycm` artifact (the runtime's
/// yoloc::Detector, everything from its manifest), or an ONNX model: import (fixing dynamic
/// input sizes), family and class names from the metadata, and a pipeline running the
/// optimized graph on the reference executor.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/detector_import.h"
#include "detect/pipeline.h"
#include "tools/artifact_options.h"
#include "yoloc/compiler.h"
#include "yoloc/runtime.h"

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

/// A detector for `yoloc run` and `yoloc eval`: a `.ycm` artifact runs through the runtime's
/// public yoloc::Detector (as an application would run it), an ONNX model on the reference
/// executor.
class DetectorModel {
 public:
  DetectorModel(std::optional<yoloc::Detector> artifact, std::unique_ptr<detect::Detector> reference,
                std::vector<std::string> names);

  /// Detections of each image (batch() images a network run) and the time of each stage.
  std::vector<std::vector<detect::Detection>> detect(const std::vector<detect::Image>& images,
                                                     detect::StageTimes* times) const;
  /// COCO mAP on the dataset in `dir` at the evaluation thresholds, with a progress counter.
  detect::EvalReport evaluate(const std::string& dir) const;

  const std::vector<std::string>& names() const { return names_; }
  int batch() const { return batch_; }
  int input_h() const { return input_h_; }
  int input_w() const { return input_w_; }

 private:
  std::optional<yoloc::Detector> artifact_;
  std::unique_ptr<detect::Detector> reference_;
  std::vector<std::string> names_;
  int batch_ = 1, input_h_ = 0, input_w_ = 0;
};

/// Loads the artifact or imports the model and builds its detector (for eval: the thresholds
/// of options are the evaluation's). Raises a UserError for a model that is not a
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
