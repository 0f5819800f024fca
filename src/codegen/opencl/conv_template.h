#pragma once
/// The OpenCL conv template: the fused "Conv (+bias) (+ReLU/SiLU) (+residual Add)" group as an
/// implicit GEMM (M = output channels, N = output pixels of one image, K = C*KH*KW) tiled per
/// work-group in local memory: each step stages a TK x TM slice of the weights and a TK x TN
/// slice of the im2col'ed input (gathered on the fly, zero padded), then every work item
/// accumulates an RM x RN register tile, its rows and columns a work-group row apart so that
/// neighbouring work items read neighbouring local words. The epilogue adds the bias, applies the
/// activation, adds the residual and stores through the output's strides (a channel slice of a
/// concat buffer is written in place). Weights are packed [K][M] (M fastest), zero-free.
/// Dense convs (group 1), NCHW activations whose pixels are dense within a channel.
#include <cstdint>
#include <optional>
#include <string>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/schedule.h"
#include "codegen/opencl/cl_kernel.h"
#include "codegen/opencl/generic_template.h"
#include "ir/graph.h"

namespace yoloc::codegen::opencl {

struct ClConvTask {
  cpu::ConvTask conv;
  const Value *x = nullptr, *w = nullptr, *bias = nullptr, *res = nullptr, *y = nullptr;
  int64_t x_image = 0, y_image = 0, res_image = 0;  ///< floats between images
  int64_t y_channel = 0, res_channel = 0;           ///< floats between channels

  /// "cl_conv <cpu conv key without the isa> xs.. ys.. rs..".
  std::string key() const;
};

/// The conv task of a fused conv group whose operands the template can address; nullopt else.
std::optional<ClConvTask> conv_task_of(const Graph& g, const FusedGroup& grp,
                                       const StridesOf& strides_of);

class ConvTemplate {
 public:
  /// Dense (group 1) 2-D convs.
  static bool matches(const ClConvTask& t);
  /// Knobs: "tm", "tn" (work-group tile of channels x pixels), "tk" (reduction slice staged in
  /// local memory), "rm", "rn" (register tile per work item).
  static ScheduleSpace space(const ClConvTask& t);
  /// In the space, and 32..256 work items per group.
  static bool valid(const ClConvTask& t, const ScheduleConfig& cfg);
  /// 64x64 tiles of 4x4 per work item (32 channels for convs to 32 or fewer), slices of 16.
  static ScheduleConfig default_config(const ClConvTask& t);
  static ClLowered emit(const ClConvTask& t, const ScheduleConfig& cfg, const std::string& prefix);
  /// The weights as the kernel reads them: [C*KH*KW][K].
  static std::vector<float> pack_weights(const ClConvTask& t);
};

}  // namespace yoloc::codegen::opencl
