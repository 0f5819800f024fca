#pragma once
/// The CPU kernel template of the detect-head tail (yolov8's Reshape / Concat / Split /
/// Transpose / Softmax / DFL conv / Slice / box arithmetic / Sigmoid / Concat, YOLOX's Sigmoid /
/// Concat / Reshape / Transpose): one kernel that computes the model's final output from the head
/// convolutions' outputs. It is driven by the group's IR: each node becomes a straight-line loop
/// nest over its static shape (reshape-like nodes become pointer aliases), intermediates live in
/// buffers of the kernel, head outputs stored in NCHW16c are re-laid to NCHW first, and
/// outputs stored in NCHW16c (values a convolution reads) are re-laid from NCHW last.
///
/// IR-driven ABI (emit_util.h): in = TailTask::args (the group's activations, then its float32
/// constants; integer constants such as shapes and slice bounds are baked into the code),
/// out = the group's outputs. One work item (the tail is a few MFLOPs; its nodes depend on
/// each other).
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/schedule.h"

namespace yoloc::codegen::cpu {

/// The workload of one tail group.
struct TailTask {
  GroupIO io;
  std::vector<const Value*> args;  ///< kernel inputs: activations, then float32 constants
  /// 1: the kernel computes the whole batch. N > 1: every activation has the batch N as its
  /// first dim and no node mixes images, so the kernel computes one image and the compiler runs
  /// it N times (outputs may then be slices of a concat whose images lie apart).
  int64_t images = 1;

  /// "detect_tail_f32 " + the ops and output shapes, e.g. "... Reshape[1,144,6400],...".
  std::string key() const;
};

/// The task of a group whose nodes the tail emitter supports (reshape-like ops, Transpose, Slice,
/// Concat, Split, Softmax, 2-D Conv and the float32 elementwise ops), every value being static
/// (float32 data, or integer constants read at compile time) and every output dense
/// (dense_output) and plain NCHW or 4-D NCHWc; nullopt otherwise. float16 activations (a float16
/// model's output Cast) are taken as raw 16-bit storage that only elementwise nodes read or
/// write. Being generic, it also serves groups no other template takes (YOLOX's Focus slices,
/// its 5-channel head convs, the attention blocks of YOLO11 / YOLOv10).
std::optional<TailTask> tail_task_from_group(const Graph& g, const FusedGroup& group);

/// The tail template. Knob "unroll": unroll of every innermost loop.
class TailTemplate {
 public:
  static bool matches(const TailTask& t);
  static ScheduleSpace space(const TailTask& t);
  static bool valid(const TailTask& t, const ScheduleConfig& cfg);
  static ScheduleConfig default_config(const TailTask& t);
  /// Raises InternalError when the task does not match or cfg is not valid.
  static CpuKernel emit(const TailTask& t, const ScheduleConfig& cfg, const std::string& symbol);
};

}  // namespace yoloc::codegen::cpu
