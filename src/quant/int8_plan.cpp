#include "quant/int8_plan.h"

#include "core/error.h"

namespace yoloc::quant {

Int8Plan make_int8_plan(const Calibration& c, const PlanOptions& options) {
  Int8Plan plan;
  plan.bias_correction = options.bias_correction;
  for (const ConvChoice& k : c.convs) {
    if (!k.float_reason.empty() || matches_any(k.conv, options.skip)) continue;
    const auto it = c.tensors.find(k.input);
    if (it == c.tensors.end())
      user_error("the calibration has no statistics of '{}' (the input of conv '{}'); "
                 "calibrate again",
                 k.input, k.conv);
    const ActivationQuant q = activation_quant(it->second.histogram, options.method);
    plan.convs[k.conv] = {q.scale, q.zero_point, it->second.channel_means()};
  }
  return plan;
}

}  // namespace yoloc::quant
