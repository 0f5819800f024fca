#pragma once
/// Loads an ONNX detector for `yoloc run` / `yoloc eval`: import (fixing dynamic input sizes),
/// family and class names from the metadata, and a Detector running the optimized graph on the
/// reference executor.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detect/pipeline.h"
#include "ir/graph.h"

namespace yoloc::tools {

struct DetectorModelOptions {
  std::string path;
  std::string family;  ///< --family; empty: from the model
  int imgsz = 0;       ///< --imgsz; 0: the model's static size, metadata imgsz, else 640
  float conf = 0.25f;
  float iou = 0.45f;
  int max_det = 300;
};

struct DetectorModel {
  std::shared_ptr<const Graph> graph;
  std::unique_ptr<detect::Detector> detector;
  std::vector<std::string> names;
};

/// Imports the model and builds its detector. Raises a UserError for a model that is not a
/// one-image-input detector, an --imgsz that a static model cannot take (or that is not a
/// positive multiple of the stride), or a family that cannot be told (see detect_family).
DetectorModel load_detector_model(const DetectorModelOptions& options);

/// Adds the arguments every detector command takes to `c`: the model, --imgsz and --family.
void add_detector_model_options(CLI::App& c, DetectorModelOptions& options);

}  // namespace yoloc::tools
