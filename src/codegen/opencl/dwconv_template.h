#pragma once
/// The OpenCL depthwise conv template: a fused "Conv (group = C = K) (+bias) (+ReLU/SiLU)
/// (+residual Add)" group, one work item per RX neighbouring output pixels of a row, work-groups
/// of LX x LY items over a plane (one channel of one image: the third NDRange dim). The window is
/// unrolled with the channel's weights and bias baked in registers from the packed weights;
/// stores go through the output's strides (concat slices in place).
#include <string>

#include "codegen/cpu/schedule.h"
#include "codegen/opencl/cl_kernel.h"
#include "codegen/opencl/conv_template.h"

namespace yoloc::codegen::opencl {

class DwConvTemplate {
 public:
  /// Depthwise (group == C == K) 2-D convs.
  static bool matches(const ClConvTask& t);
  /// Knobs: "lx", "ly" (work-group shape over columns x rows), "rx" (columns per work item).
  static ScheduleSpace space(const ClConvTask& t);
  static bool valid(const ClConvTask& t, const ScheduleConfig& cfg);
  /// 16 x 8 work items, 2 columns each (1 for outputs narrower than 32 columns).
  static ScheduleConfig default_config(const ClConvTask& t);
  static ClLowered emit(const ClConvTask& t, const ScheduleConfig& cfg, const std::string& prefix);
};

}  // namespace yoloc::codegen::opencl
