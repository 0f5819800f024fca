#pragma once
/// Post-training int8 of a model: calibrating it (src/quant over its optimized float graph) and
/// turning a calibration into the plan the compile's quantize_graph pass applies.
#include <string>

#include "passes/quantize_graph.h"
#include "quant/calibration_file.h"
#include "yoloc/compiler.h"

namespace yoloc::compiler {

/// Calibrates the ONNX model at `path` on the images of o.calibration (the model's optimized
/// float graph on the reference executor). Raises a one-line UserError for a folder without
/// readable images or a model with no conv to quantize.
quant::Calibration calibrate_model(const std::string& path, const ModelOptions& model,
                                   const Int8Options& o, bool progress);

/// The plan of o.calibration (calibrated now) or o.calibration_file (of this model only).
Int8Plan int8_plan(const std::string& path, const ModelOptions& model, const Int8Options& o);

}  // namespace yoloc::compiler
