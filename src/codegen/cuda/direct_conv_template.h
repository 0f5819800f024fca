#pragma once
/// The direct conv template: the first convolution of a network (the stem: 3 input channels, a
/// 3x3 or 6x6 stride-2 window), and any conv of groups 1 with at most 4 input channels, for the
/// fused group "Conv (+bias) (+ReLU/SiLU) (+residual Add)" written into any channel slice of its
/// output buffer. The input is a dense NCHW float32 tensor (the image) or NHWC fp32 / fp16 / bf16
/// (any channel slice); the output NHWC fp32, fp16 or bf16. Arithmetic is fp32.
///
/// With so few input channels an implicit GEMM has a depth of only C*KH*KW (27 for the stem) and
/// spends its time gathering; here a block owns a TH x TW tile of output pixels of one image and
/// KB output channels. It stages the input rows and columns the tile reads (its window's halo
/// included, zeros outside the image) for all C channels in shared memory with coalesced loads
/// (consecutive threads, consecutive columns), and the KB channels' weights next to them. Thread
/// (g, tx, ty) then computes the PT pixels (ty + i*TH/PT, tx) x the TN channels g*TN.. of the
/// block in fp32 registers: per window tap, TN weights (16-byte shared-memory broadcasts) and PT
/// input words (consecutive threads read consecutive words: columns are stored by phase, column
/// % stride, so a stride-2 window reads no bank twice) feed PT*TN FMAs. The epilogue writes TN
/// channels per pixel in 16-byte vectors (conv_common_source's epilogue_vec).
///
/// Weights: what pack_weights makes, float32 [C*KH*KW][KP] (tap (c, kh, kw) major, KP = K rounded
/// up to 64 with zeros), so a block's KB channels of one tap are contiguous.
#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "core/tensor.h"

namespace yoloc::codegen::cuda {

class DirectConvTemplate {
 public:
  /// Input channels the template takes at most.
  static constexpr int64_t kMaxChannels = 4;

  /// True for groups == 1, C <= kMaxChannels, C*KH*KW <= 256 window taps, a dense NCHW float32
  /// input (in_nchw_f32) or an NHWC fp32 / fp16 / bf16 one, output fp32, fp16 or bf16, slices
  /// that hold their tensors, and fewer than 2^31 output pixels.
  static bool matches(const CudaConvTask& t);
  /// Knobs: "tw", "th" (output tile columns x rows of a block), "pt" (tile rows per thread),
  /// "kb" (output channels per block), "tn" (output channels per thread).
  static ScheduleSpace space(const CudaConvTask& t);
  /// True when cfg is a point of space(t) with pt | th, tn | kb, kb at most K rounded up to a
  /// power of two (or 8), 32 to 512 threads, at most 64 accumulators per thread and its shared
  /// memory within kMaxSharedBytes.
  static bool valid(const CudaConvTask& t, const ScheduleConfig& cfg);
  /// A heuristic config, valid for every matching task: all K channels in a block (up to 64),
  /// 16 per thread, 32-column tiles of 128 threads, made smaller until there are about two blocks
  /// per multiprocessor.
  static ScheduleConfig default_config(const CudaConvTask& t);
  /// The kernel; `symbol` names it (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
  /// OIHW float32 weights (K*C*KH*KW values) in the kernel's layout.
  static Tensor pack_weights(const CudaConvTask& t, const float* oihw);
};

}  // namespace yoloc::codegen::cuda
