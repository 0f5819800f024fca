#pragma once
/// From a calibration to the plan the quantize_graph pass applies: each int8 conv's input scale
/// and zero point by the chosen method, its input's channel means for the bias correction.
#include <string>
#include <vector>

#include "passes/quantize_graph.h"
#include "quant/calibration_file.h"

namespace yoloc::quant {

struct PlanOptions {
  Method method = Method::kEntropy;
  std::vector<std::string> skip;  ///< --int8-skip: convs kept in float too
  bool bias_correction = true;
};

/// The plan of the calibration's int8 convs, less those `options.skip` matches.
Int8Plan make_int8_plan(const Calibration& c, const PlanOptions& options);

}  // namespace yoloc::quant
