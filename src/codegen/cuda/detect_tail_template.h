#pragma once
/// The detect-tail template: the DFL tail of YOLOv8 / YOLO11 / YOLOv10 heads (the nodes after the
/// head convolutions, up to the [N, 4+C, A] output) as one kernel.
///
/// The group is matched structurally, node by node, and taken only when every node is one of:
///   - Reshape of a head output [N, Ch, H, W] to [N, Ch, H*W]; Concat of those on the anchor
///     axis (the levels, in order); Split / Slice of them on the channel axis: the "gathered"
///     channels of every anchor, read straight from the head outputs (any strides: NCHW, NHWC,
///     channel slices; fp32 / fp16 / bf16);
///   - the DFL: a Reshape of gathered channels to [N, S, R, A] (S sides of R bins), Transposes,
///     a Softmax over the bins, and a 1x1 Conv over the bins with one output channel (its R
///     weights and bias are read, not assumed 0..R-1), then a Reshape to the distances
///     [N, S, A];
///   - the box decode: Slice / Concat on the channel axis and Add / Sub / Mul / Div of decoded
///     values and float constants (the anchor points and strides, read from the graph's
///     constants; scalars such as 0.5 or 2), in any form (xywh as v8 exports, xyxy as v10);
///   - Sigmoid of gathered channels (the class scores);
///   - the one output: a Concat on the channel axis of decoded values and the class sigmoids.
/// Any other node, shape, attribute or a value leaving the group elsewhere leaves the group to the
/// generic template.
///
/// Work units: one thread per (image, anchor) and unit; unit 0 loads the anchor's S x R box
/// logits once, takes each side's softmax expectation in registers (max, exp, sum), decodes and
/// stores the box channels; unit u > 0 stores the sigmoids of class chunk u - 1. Consecutive
/// threads take consecutive anchors: NCHW head outputs are read, and the [N, 4+C, A] output
/// written, in coalesced accesses.
///
/// Kernel ABI: extern "C" __global__ (const void* in_0, ..., const float* table, void* out), the
/// inputs in DetectTailTask::inputs order, each pointer at element 0 of its value; `table`:
/// DetectTailTask::table (per-anchor constants, rows of A floats; may be null when empty).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/generic_template.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// One feature map: anchors [first, first + h*w), anchor first + i*w + j at pixel (i, j).
struct DetectTailLevel {
  int64_t h = 0, w = 0, first = 0;
  int box_input = 0, cls_input = 0;     ///< indices into DetectTailTask::inputs
  int64_t box_channel = 0, cls_channel = 0;  ///< first DFL / class channel in those inputs
};

/// An operand of a decode statement.
struct DetectTailOperand {
  enum class Kind { kDistance, kTemp, kTable, kLiteral };
  Kind kind = Kind::kLiteral;
  int64_t index = 0;  ///< side, temp or table row
  float literal = 0;
};

/// temp[i] = a op b for statement i; op one of + - * /.
struct DetectTailStatement {
  char op = '+';
  DetectTailOperand a, b;
};

/// The workload of one DFL detect tail.
struct DetectTailTask {
  int64_t n = 0, anchors = 0, sides = 4, bins = 16, classes = 0;
  std::vector<CudaOperand> inputs;  ///< the head outputs (4-D [N, Ch, H, W])
  std::vector<DetectTailLevel> levels;
  std::vector<float> dfl_weights;  ///< R bin weights of the DFL conv
  float dfl_bias = 0;
  std::vector<DetectTailStatement> decode;
  /// Output channel k < box_channels().size(): box_out[k]; channels class_offset .. + C: the
  /// class sigmoids.
  std::vector<DetectTailOperand> box_out;
  int64_t class_offset = 0;
  std::vector<float> table;  ///< rows of `anchors` floats (anchor points, strides)
  CudaOperand output;        ///< [N, box_out + C, A]
  /// The class sigmoids are stored by the head convs that make them (CudaConvTask::scores,
  /// extract_cuda_tasks): the kernel has box units only and reads no class channel (their inputs
  /// may be null).
  bool classes_stored = false;

  /// Workload key, e.g. "cuda_detect_tail f16->f32 n1 a8400 s4 r16 c80 box4 cls@4 levels
  /// 80x80,40x40,20x20 in f16:409600,6400,80,1 ... decode t0=T0-d0 ... out f32:705600,8400,1",
  /// " cls-stored" appended when classes_stored.
  std::string key() const;
};

/// The task of group `grp` (operands addressed as `operand_of` says), or nullopt with the reason
/// in `why` when the group is not a DFL tail of the form above.
std::optional<DetectTailTask> detect_tail_task_from_group(
    const Graph& g, const FusedGroup& grp,
    const std::function<CudaOperand(const Value*)>& operand_of, std::string* why = nullptr);

/// The box unit of `t`'s kernel, for a kernel's namespace: the output type TO, enumerators A
/// (anchors), S, R and the output strides ON, OC, OA, and
///   template <class TI> box_unit(const TI* x, yc_i64 sc, const float* table, int a, TO* y)
/// which decodes anchor a from its S x R logits (x at the first, channels sc apart; global or
/// shared memory) into its box channels (y at its output element of channel 0). A b2b pair
/// storing the boxes (CudaConvTask::boxes) runs it on its staged output tile.
std::string detect_box_unit_source(const DetectTailTask& t);

class DetectTailTemplate {
 public:
  /// True when t is well formed (sizes, levels covering the anchors, operands in range,
  /// fp32 / fp16 / bf16 storage, fewer than 2^31 threads at the smallest config).
  static bool matches(const DetectTailTask& t);
  /// Knobs: "threads" (block size), "class_chunk" (classes per class unit).
  static ScheduleSpace space(const DetectTailTask& t);
  /// True when cfg is a point of space(t), its chunk not above C's next power of two, and the
  /// grid fits in 2^31 threads.
  static bool valid(const DetectTailTask& t, const ScheduleConfig& cfg);
  /// 256 threads, class chunks of 16 (a class unit costs about what the box unit does).
  static ScheduleConfig default_config(const DetectTailTask& t);
  /// The kernel `symbol`. Raises InternalError for an invalid config.
  static CudaKernel emit(const DetectTailTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
};

}  // namespace yoloc::codegen::cuda
