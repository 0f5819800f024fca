#pragma once
/// The SPPF template: a fused group of stride-1 "same" MaxPools over one NHWC input x, written
/// into channel slices (YOLOv5/v8/11's SPPF: x -> pool5 -> pool5 -> pool5, concatenated with x
/// along channels), as one kernel that reads x once.
///
/// The pools a group stores (those leaving it, directly or through view Concats) each take the
/// max over a window of x: a chain's windows add up (5x5 three times: 5x5, 9x9, 13x13). Sorted by
/// size, each window holds the one before, so they are computed one after the other: stage i
/// applies the increment from window i-1 to window i (5x5 three times again) to stage i-1's
/// values. Chains (SPPF), pools side by side on x (SPP's 5, 9, 13) and a single MaxPool are all
/// such groups. ONNX's padding is -inf; since every window holds its center, the max over a
/// window clipped to the image is the same whether the stages clip or pad, and out-of-image
/// positions of a stage never change an in-image result.
///
/// A block owns one image, CB channels and a TH x TW tile of pixels. It loads the tile with a
/// halo of the summed pads into shared memory as fp32 (vector loads of up to 16 bytes, -inf
/// outside the image); an axis of the image no longer than the tile is one tile without halo.
/// Each stage is separable: a row pass (a thread holds a row of one channel in registers and
/// writes its sliding-window max) and a column pass the same way, each from shared memory into
/// shared memory; then the block stores the stage's tile into its concat slices with vector
/// stores. x itself is never written (a view Concat holds it in place already). Maxes are fmaxf:
/// a NaN counts only where its whole window is NaN (the reference executor keeps a NaN that
/// comes first in its window's order; the generic template uses fmaxf too).
///
/// Kernel ABI: extern "C" __global__ (const void* x, void* out_0, ..., void* out_{m-1}), each
/// pointer at element 0 of the buffer its value lies in (the slice offsets are compiled in), in
/// the order of SppfTask::outputs.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// Where a stage's values go: output `output`'s buffer, at `slice` (NHWC channel slice).
struct SppfStore {
  int output = 0;
  ChannelSlice slice;
};

/// One stage: the window max applied to the previous stage's values (the first stage's: to x),
/// a KH x KW window whose top-left is PT rows above and PL columns left of its output (its other
/// pads KH-1-PT and KW-1-PL), and where its values go.
struct SppfStage {
  int64_t kh = 1, kw = 1, pt = 0, pl = 0;
  std::vector<SppfStore> stores;
};

/// The workload of one SPPF-like group.
struct SppfTask {
  DType dtype = DType::kFloat16;  ///< storage of x and every output
  int64_t n = 0, c = 0, h = 0, w = 0;
  const Value* x = nullptr;  ///< the input (may be null in tests, as the outputs)
  ChannelSlice in;           ///< x in its buffer
  /// The values of the kernel's output pointers (each points at element 0 of its buffer) and
  /// where they lie in their buffers.
  std::vector<const Value*> outputs;
  std::vector<ChannelSlice> out_slices;
  std::vector<SppfStage> stages;

  /// The summed pads of the stages: top, bottom, left, right.
  std::array<int64_t, 4> halo() const;
  /// Workload key, e.g. "cuda_sppf f16 n1 c128 h20 w20 in512+0 5x5 p2x2 out0:512+128 5x5 p2x2
  /// out0:512+256 5x5 p2x2 out0:512+384".
  std::string key() const;
};

/// The task of group `grp`, or nullopt (with the reason in `why` when given) when it is not
/// only stride-1 same-size MaxPools over one NHWC fp32 / fp16 / bf16 input with nested windows
/// and view Concats on the channel axis, or its values are not NHWC channel slices.
std::optional<SppfTask> sppf_task_from_group(const Graph& g, const FusedGroup& grp,
                                             std::string* why = nullptr);

class SppfTemplate {
 public:
  /// True when t is well formed (sizes, slices that hold their values, fp32 / fp16 / bf16) and
  /// some config of the space is valid.
  static bool matches(const SppfTask& t);
  /// Knobs: "channels" (CB, channels per block), "tile" (edge of the spatial tile), "threads".
  static ScheduleSpace space(const SppfTask& t);
  /// True when cfg is a point of space(t) whose region (tile + halo) is at most 64 pixels on a
  /// side, whose shared memory fits kMaxSharedBytes, and whose CB is not above C's next power of
  /// two (nor 4).
  static bool valid(const SppfTask& t, const ScheduleConfig& cfg);
  /// CB 8 (4 when that does not fit), the whole image as one tile when it fits in 64 KiB of
  /// shared memory (else the largest tile that does), threads for one line per thread.
  static ScheduleConfig default_config(const SppfTask& t);
  /// The kernel `symbol` (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const SppfTask& t, const ScheduleConfig& cfg, const std::string& symbol);
};

}  // namespace yoloc::codegen::cuda
