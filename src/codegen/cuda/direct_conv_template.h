#pragma once
/// The direct conv template: the first convolution of a network (the stem: 3 input channels, a
/// 3x3 or 6x6 stride-2 window), and any conv of groups 1 with at most 4 input channels, for the
/// fused group "Conv (+bias) (+ReLU/SiLU) (+residual Add)" written into any channel slice of its
/// output buffer. The input is a dense NCHW float32 tensor (the image) or NHWC fp32 / fp16 / bf16
/// (any channel slice); the output NHWC fp32, fp16 or bf16.
///
/// With so few input channels an implicit GEMM has a depth of only C*KH*KW (27 for the stem) and
/// spends its time gathering; here a block owns a TH x TW tile of output pixels of one image and
/// KB output channels. It stages the input rows and columns the tile reads (its window's halo
/// included, zeros outside the image) for all C channels in shared memory with coalesced loads
/// (consecutive threads, consecutive columns; a batch of rows' loads in flight before their
/// stores), fp32, and the KB channels' weights next to them. Tile columns are stored by phase
/// (column % stride): at a window tap, consecutive output columns read consecutive words, so a
/// stride-2 window reads no bank twice. Then one of two paths (knob "mma"):
///  - FMA (any dtype; exact fp32): thread (g, tx, ty) computes the PT pixels (ty + i*TH/PT, tx)
///    x the TN channels g*TN.. in fp32 registers: per tap, TN weights (16-byte shared-memory
///    broadcasts) and PT input words feed PT*TN FMAs; the epilogue writes TN channels per pixel
///    in 16-byte vectors (conv_common_source's epilogue_vec).
///  - MMA (fp16 / bf16 tasks; the image is rounded to that type, as the tensor-core template
///    does): warp (g, mx, ty) computes the PT m-tiles (16 pixels of a tile row: columns mx +
///    j*TW/16, the m-tiles of a row interleaved) of rows ty + i*TH/PT, x its TN channels with
///    mma.m16n8k16 over the taps in 16-deep steps, fp32 accumulators. A lane's depth indices, so
///    their places in the tile and its weight fragments, are the same for every m-tile: computed
///    once; the A fragments are gathered from the staged tile (two words, one conversion per
///    register), the tile's row and channel strides padded so that a warp's reads take as few
///    shared-memory wavefronts as they can (32 x 16 tiles: 13 for the stem's 8 reads of 32
///    words, 27 with consecutive pixels and dense strides; 48 for YOLOv5's 28, 108 so). Pairs of
///    channels go through epilogue2.
/// The FMA path spends 27 FMAs per output of the stem, the MMA path about 4 instructions; the
/// fused epilogue (bias, SiLU) then dominates both.
///
/// Weights: what pack_weights makes, float32 [C*KH*KW][KP] (tap (c, kh, kw) major, KP = K rounded
/// up to 64 with zeros), so a block's KB channels of one tap are contiguous.
#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "yoloc/tensor.h"

namespace yoloc::codegen::cuda {

class DirectConvTemplate {
 public:
  /// Input channels the template takes at most.
  static constexpr int64_t kMaxChannels = 4;

  /// True for groups == 1, C <= kMaxChannels, C*KH*KW <= 256 window taps, strides up to 4 and
  /// window extents ((KH - 1) * DH + 1, the same for columns) up to 16, a dense NCHW fp32 / fp16
  /// / bf16 input (in_nchw, image_dtype) or an NHWC fp32 / fp16 / bf16 one, output fp32, fp16 or
  /// bf16, slices that hold their tensors, fewer than 2^31 output pixels and 2^19 output channels.
  static bool matches(const CudaConvTask& t);
  /// Knobs: "tw", "th" (output tile columns x rows of a block), "pt" (tile rows per thread, or
  /// m-tile rows per warp), "kb" (output channels per block), "tn" (output channels per thread,
  /// or per warp), "mma" (0: FMA path, 1: MMA path).
  static ScheduleSpace space(const CudaConvTask& t);
  /// True when cfg is a point of space(t) with pt | th, tn | kb, kb at most K rounded up to a
  /// power of two (or 8), 32 to 512 threads and its shared memory within kMaxSharedBytes; FMA: at
  /// most 64 accumulators per thread; MMA: an fp16 / bf16 task, 16 | tw, 8 | tn and at most 128
  /// registers of fragments, depth places and accumulators per thread.
  static bool valid(const CudaConvTask& t, const ScheduleConfig& cfg);
  /// A heuristic config, valid for every matching task: the MMA path for fp16 / bf16 tasks, all
  /// K channels in a block (up to 64), 16 per thread (warp), 32-column tiles of 4 rows per thread
  /// (warp) and 128 threads (8 warps), made smaller until there are about two blocks per
  /// multiprocessor.
  static ScheduleConfig default_config(const CudaConvTask& t);
  /// The kernel; `symbol` names it (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
  /// OIHW float32 weights (K*C*KH*KW values) in the kernel's layout.
  static Tensor pack_weights(const CudaConvTask& t, const float* oihw);
};

}  // namespace yoloc::codegen::cuda
