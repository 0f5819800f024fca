#pragma once
/// The stem-pair template: a network's first two convolutions in one kernel. The first reads
/// the dense NCHW float32 image (at most 4 channels, e.g. YOLOv8's 3x3 / YOLOv5's 6x6 stride-2
/// stem); the second reads nothing but the first's output (e.g. the 3x3 stride-2 conv to 32
/// channels), so that output, the largest activation of the network after the image, never
/// reaches memory. At batch 1 the pair was the longest stretch of the dependency chain (yolov8n
/// on an H200: 7.8 + 6.7 us of the graph's 262, bench/results/2026-12-01-h200-ingraph.json).
///
/// A block owns a TH x TW tile of the second conv's output pixels of one image and all its K
/// channels, in three phases:
///  1. it stages the image rows and columns the tile depends on (both windows' halos, zeros
///     outside the image) in shared memory as float32, columns stored by phase (column % the
///     first stride) so that consecutive pixels of the first conv read consecutive words, and
///     both convs' weights;
///  2. it computes the first conv on the R x Q intermediate pixels the second's window covers, a
///     thread PP pixels at a time (each weight read from shared memory feeds PP FMAs), in fp32 FMAs
///     (exact, unlike the direct template's MMA path, which rounds the image), adds its bias,
///     applies its activation and rounds to the second conv's input type (as the unfused pair
///     stores it) into shared memory; intermediate pixels outside the first conv's output are the
///     second conv's zero padding;
///  3. it computes the second conv as an implicit GEMM over the staged intermediate with
///     mma.m16n8k16 (fp16 or bf16 operands, fp32 accumulators): warp w takes the m-tiles (16
///     pixels of the tile, row-major) w, w + WARPS, ... and every n-tile; its B fragments come in
///     fragment order from shared memory (one 8-byte read per lane), its A fragments are 32-bit
///     reads of the staged intermediate, whose pixels are padded to K0 + 4 channels so that the 8
///     pixel rows of a fragment fall on different banks; then the fused epilogue (bias,
///     activation) writes the output into its channel slice.
/// The recomputed halo costs about (R * Q) / (TH * TW * S^2) more first-conv work: 14 % for 4 x
/// 32 tiles of two stride-2 3x3 convs.
///
/// Not yet faster, so off unless asked (yoloc compile --stem-pair). On an H200, yolov8n fp16
/// (bench/results/2026-12-01-h200-stem-pair.json): at batch 1 the pair adds 17.4 us inside
/// the graph where the two kernels add 7.8 + 6.7 us, so the network takes 0.258 ms against
/// 0.255 ms; at batch 128 it takes 1.16 ms against 0.44 + 0.37 ms for the two. Nsight Compute
/// (default config, batch 1): 200 blocks of 8 warps, 1.5 per multiprocessor (3 fit), 19 %
/// achieved occupancy, 0.46 instructions issued per scheduler and cycle, about 30,000 warp
/// instructions a block (index arithmetic of the staging, the gathers, two epilogues): the
/// phases run one after the other with too few warps to hide their latencies, where the two
/// kernels each fill the GPU. The first conv on FMAs (mma = 0) was slower still (20 us).
///
/// Kernel parameters: (x, w0, bias0, w1, bias1, y): x the image (dense NCHW float32), w0 what
/// pack_first_weights makes, bias0 K0 floats, w1 what pack_second_weights makes, bias1 K floats,
/// y the start of the output's buffer (its slice offset is compiled in).
#include <string>

#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "yoloc/tensor.h"

namespace yoloc::codegen::cuda {

/// The two convs of a stem pair: `first` reads the image (in_nchw) and writes a dense NHWC
/// intermediate of `second`'s input type, which `second` alone reads (dense) and writes into its
/// output slice.
struct StemPairTask {
  CudaConvTask first, second;
  /// "cuda_stem_pair " + the first's key + " then " + the second's: tuned apart from either.
  std::string key() const;
};

class StemPairTemplate {
 public:
  /// True when the first conv reads the image (in_nchw, at most 4 channels) with a window of
  /// at most 7x7 and strides up to 4, and the second reads exactly its output (same batch, its
  /// height and width as input, dense, fp16 or bf16, that dtype the first's output dtype) with a
  /// window up to 3x3 and strides up to 2; both groups 1, dilation 1, no residual, no upsampled
  /// copy, NHWC outputs; K0 (the intermediate's channels) a multiple of 16 up to 64, the second's
  /// K a multiple of 8 up to 128; fewer than 2^31 output pixels.
  static bool matches(const StemPairTask& t);
  /// Knobs: "th", "tw" (output tile rows and columns of a block), "warps" (warps of a block),
  /// "pp" (first-conv pixels a thread computes at a time).
  static ScheduleSpace space(const StemPairTask& t);
  /// True for a point of space(t) whose tile is a whole number of m-tiles per warp, with at most
  /// 64 accumulators per thread in either conv and its shared memory within kMaxSharedBytes.
  static bool valid(const StemPairTask& t, const ScheduleConfig& cfg);
  /// 4 x 32 tiles, 8 warps and 2 pixels per thread, made smaller until the shared memory and the
  /// accumulators fit.
  static ScheduleConfig default_config(const StemPairTask& t);
  /// The kernel; `symbol` names it (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const StemPairTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
  /// The first conv's OIHW float32 weights as float32 [C0 * KH0 * KW0][K0] (tap-major).
  static Tensor pack_first_weights(const StemPairTask& t, const float* oihw);
  /// The second conv's OIHW float32 weights as B fragments of mma.m16n8k16 in its input dtype:
  /// [step][n-tile][lane][4 values], step (ky, kx, 16-channel chunk), lane l holding rows
  /// 2 * (l % 4) + {0, 1, 8, 9} of the step's 16 depth rows at column (n-tile * 8 + l / 4).
  static Tensor pack_second_weights(const StemPairTask& t, const float* oihw);
};

}  // namespace yoloc::codegen::cuda
