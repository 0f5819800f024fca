#pragma once
/// The depthwise conv template: a convolution with groups == C == K (one input channel per
/// output channel: YOLOX's DWConv, MobileNet-style blocks) over channels-last activations, for the
/// fused group "Conv (+bias) (+ReLU/SiLU) (+residual Add)" written into any channel slice of its
/// output buffer, NHWC or NCHW. Input fp32, fp16 or bf16 (any NHWC channel slice); output fp32,
/// fp16 or bf16.
///
/// A depthwise conv does KH*KW multiply-adds per output, so it is bound by memory, not
/// arithmetic: what matters is reading each input once per block of neighbours and writing in
/// wide pieces. Thread (img, oh, column group, channel vector) computes VEC consecutive channels
/// of PX consecutive output pixels of one row, in fp32 registers: per window row it loads the
/// SPAN = (PX - 1) * SW + (KW - 1) * DW + 1 input pixels the PX windows read (each once, VEC
/// channels in 16-byte pieces where the slice keeps them aligned) and the row's KW x VEC weights,
/// and every input vector feeds the taps that read it (which ones is fixed at compile time).
/// Consecutive threads take consecutive channel vectors of one pixel, so that a warp's loads and
/// stores are contiguous runs of the pixel's channels. The epilogue (bias, activation, residual,
/// output slice, upsampled copy) is conv_common_source's epilogue_vec: 16-byte stores in NHWC.
///
/// Weights: what pack_weights makes, float32 [KH*KW][CP] (tap major, CP = C rounded up to 8 with
/// zeros), so that a thread's VEC channels of one tap are contiguous.
#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "yoloc/tensor.h"

namespace yoloc::codegen::cuda {

class DwConvTemplate {
 public:
  /// True for depthwise tasks (groups == C == K, C > 1), input and output fp32, fp16 or bf16, an
  /// NHWC input (not the NCHW image), window extents up to 16, slices that hold their tensors,
  /// and fewer than 2^31 output pixels and work items.
  static bool matches(const CudaConvTask& t);
  /// Knobs: "vec" (channels per thread: 1, 2, 4, 8), "px" (output pixels of a row per thread: 1,
  /// 2, 4, 8), "threads" (per block: 64 to 512).
  static ScheduleSpace space(const CudaConvTask& t);
  /// True when cfg is a point of space(t) whose registers of accumulators, one row's weights and
  /// one input vector (VEC * (PX + KW + 1)) stay within 96, and whose vec is at most C rounded up
  /// to a power of two.
  static bool valid(const CudaConvTask& t, const ScheduleConfig& cfg);
  /// A heuristic config, valid for every matching task: 16 bytes of channels per thread (8 for
  /// 16-bit inputs, 4 for fp32; fewer where C is not a multiple), 2 pixels per thread at stride 1,
  /// 128 threads; fewer pixels per thread, then fewer threads, while the grid would have fewer
  /// than two blocks per multiprocessor of an H100.
  static ScheduleConfig default_config(const CudaConvTask& t);
  /// The kernel; `symbol` names it (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
  /// OIHW float32 weights (K*1*KH*KW values) in the kernel's layout.
  static Tensor pack_weights(const CudaConvTask& t, const float* oihw);
};

}  // namespace yoloc::codegen::cuda
