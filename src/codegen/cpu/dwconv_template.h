#pragma once
/// The CPU kernel template of the fused depthwise conv group: Conv with group == C == K (+bias)
/// (+ReLU/SiLU) (+residual Add), the separable convs of YOLOX. Each output channel reads one
/// input channel, so the 16 lanes of an NCHW16c block are 16 independent channels and the
/// kernel vectorises over them; channel counts that are not a multiple of 16 stay plain NCHW
/// (what the layout pass leaves them in) and run with one lane.
///
/// Same ABI as ConvTemplate: symbol(in, w, bias, res, out, begin, end); weights as pack_weights
/// makes them: [C/L][KH][KW][L] (L = lanes); bias [C].
#include <string>
#include <vector>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/schedule.h"

namespace yoloc::codegen::cpu {

/// The depthwise template. Knob "owb": output columns per register tile. Work items are output
/// rows of one channel block. NCHW16c kernels are written in the conv template's vector
/// operations for the task's ISA (vector_prelude); a tile keeps its accumulators and the input
/// columns of one kernel row in registers, so each tap is one FMA. Plain NCHW kernels are scalar
/// C++.
class DwConvTemplate {
 public:
  /// True for depthwise tasks (groups == C == K) of positive sizes.
  static bool matches(const ConvTask& t);
  /// 16 for NCHW16c (C a multiple of 16), else 1.
  static int64_t lanes(const ConvTask& t);
  static ScheduleSpace space(const ConvTask& t);
  /// True when cfg is in space(t) and owb <= OW.
  static bool valid(const ConvTask& t, const ScheduleConfig& cfg);
  static ScheduleConfig default_config(const ConvTask& t);
  /// Raises InternalError when the task does not match or cfg is not valid.
  static CpuKernel emit(const ConvTask& t, const ScheduleConfig& cfg, const std::string& symbol);
  /// Packs [C][1][KH][KW] weights into [C/L][KH][KW][L].
  static std::vector<float> pack_weights(const ConvTask& t, const float* weights);
};

}  // namespace yoloc::codegen::cpu
