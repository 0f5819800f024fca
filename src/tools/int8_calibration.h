#pragma once
/// The int8 options `yoloc calibrate` and `yoloc compile --precision int8` share, and what they
/// do with a model: calibrate it (src/quant over its optimized float graph) or turn a
/// calibration into the plan the compile's quantize_graph pass applies.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "passes/quantize_graph.h"
#include "quant/calibration_file.h"
#include "tools/detector_model.h"

namespace yoloc::tools {

struct Int8Options {
  std::string calibration;       ///< --calibration DIR
  std::string calibration_file;  ///< --calibration-file CALIB.json
  int images = 128;              ///< --calibration-images
  std::string method;            ///< --calibration-method; empty: the file's, else mse
  std::vector<std::string> skip;  ///< --int8-skip
  bool no_bias_correction = false;
  int sensitivity_images = 0;  ///< calibrate --sensitivity: on the first N images (0: none)
  double max_map_drop = 0;     ///< --max-map-drop (accuracy-aware mode; 0: off)
  std::string validation;      ///< --validation DIR of the accuracy-aware mode
  bool any() const {
    return !calibration.empty() || !calibration_file.empty() || !method.empty() || !skip.empty() ||
           max_map_drop > 0 || !validation.empty();
  }
};

/// --calibration, --calibration-images, --calibration-method, --int8-skip; with `compile`
/// also --calibration-file and --no-bias-correction.
void add_int8_options(CLI::App& c, Int8Options& o, bool compile);

/// Calibrates the model on the images of o.calibration (the model's optimized float graph on
/// the reference executor). Raises a one-line UserError for a folder without readable images
/// or a model with no conv to quantize.
quant::Calibration calibrate_model(const DetectorModelOptions& model, const Int8Options& o,
                                   bool progress);

/// The plan of --calibration DIR (calibrated now) or --calibration-file (of this model only).
Int8Plan int8_plan(const DetectorModelOptions& model, const Int8Options& o);

}  // namespace yoloc::tools
