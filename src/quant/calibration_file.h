#pragma once
/// A calibration kept for reuse (`yoloc calibrate -o CALIB.json`, `compile --calibration-file`):
/// the model's identity, the convs chosen for int8 and the statistics of their inputs, so that
/// a compile can pick any scale method without running the images again.
#include <map>
#include <string>
#include <vector>

#include "quant/collector.h"
#include "quant/int8_rules.h"
#include "quant/scale_methods.h"
#include "quant/sensitivity.h"

namespace yoloc::quant {

struct Calibration {
  std::string model_digest;  ///< sha256 of the ONNX file (model_digest)
  std::string model;         ///< the model's path when calibrated (informative)
  int input_w = 0, input_h = 0;
  std::string folder;
  int images = 0;
  Method method = Method::kEntropy;  ///< the method asked for when calibrating
  std::vector<ConvChoice> convs;     ///< every conv, int8 or float with the reason
  std::map<std::string, TensorStats> tensors;  ///< the int8 convs' inputs
  /// calibrate --sensitivity: each int8 conv's output error alone in int8, largest first.
  std::vector<LayerSensitivity> sensitivity;
};

/// The hex sha256 of the model file. Raises a UserError when it cannot be read.
std::string model_digest(const std::string& path);

/// Writes `c` as JSON to `path` through a temporary file (nothing is left on failure).
void write_calibration(const Calibration& c, const std::string& path);

/// Reads a calibration file and checks it belongs to the model of digest `digest`: a one-line
/// UserError for a missing or malformed file, or one of another model.
Calibration read_calibration(const std::string& path, const std::string& digest);

}  // namespace yoloc::quant
