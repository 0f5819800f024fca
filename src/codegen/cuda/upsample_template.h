#pragma once
/// The upsample template: a nearest Resize by integer factors (conv_upsample's nearest_factors:
/// output pixel (oh, ow) is input pixel (oh / sh, ow / sw)), NHWC in and out, alone in its kernel
/// group, each pixel's channels in 16-byte pieces (channels, the slices' strides and offsets
/// multiples of 16 bytes). The 2x upsamplings of YOLO necks that no conv writes as its upsampled
/// copy (above kUpsampleMaxBatch) come here; the generic template moves them element by element
/// (about 1 TB/s on an H200 at batch 128).
///
/// A thread owns PX consecutive 16-byte pieces of the input (consecutive threads, consecutive
/// pieces: a warp reads whole pixels in order) and stores each to the sh x sw output pixels it
/// becomes: every access 16 bytes, each input byte read once.
///
/// Kernel ABI: extern "C" __global__ (const void* x, void* y), each pointer at element 0 of the
/// buffer its value lies in (the slice offsets are compiled in).
#include <cstdint>
#include <optional>
#include <string>

#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// The workload of one upsample group.
struct UpsampleTask {
  DType dtype = DType::kFloat16;       ///< storage of x and y
  int64_t n = 0, c = 0, h = 0, w = 0;  ///< x's shape
  int64_t sh = 1, sw = 1;              ///< y is n x c x (h * sh) x (w * sw)
  const Value* x = nullptr;            ///< may be null in tests, as y
  const Value* y = nullptr;
  ChannelSlice in, out;  ///< x and y in their buffers

  /// Elements of a 16-byte piece.
  int64_t vec() const;
  /// Workload key, e.g. "cuda_upsample f16 n128 c256 h20 w20 x2x2 in384+128 out384+0".
  std::string key() const;
};

/// The task of group `grp` when it is one Resize as above; nullopt (the reason in `why`) else.
std::optional<UpsampleTask> upsample_task_from_group(const Graph& g, const FusedGroup& grp,
                                                     std::string* why = nullptr);

class UpsampleTemplate {
 public:
  /// True for fp32 / fp16 / bf16 storage, sh and sw from 1 to 8, channels, slice strides and
  /// offsets multiples of vec(), and fewer than 2^31 pieces.
  static bool matches(const UpsampleTask& t);
  /// Knobs: "threads" (block size), "px" (16-byte pieces per thread).
  static ScheduleSpace space(const UpsampleTask& t);
  static bool valid(const UpsampleTask& t, const ScheduleConfig& cfg);
  /// 256 threads, 1 piece each.
  static ScheduleConfig default_config(const UpsampleTask& t);
  /// The kernel `symbol`. Raises InternalError for an invalid config.
  static CudaKernel emit(const UpsampleTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
};

}  // namespace yoloc::codegen::cuda
