#pragma once
/// The CPU kernel template of an elementwise group: any chain of unary / binary elementwise ops
/// (SiLU, Sigmoid, Relu, Add, Mul, Sub, Div, ...) with broadcast constants, evaluated per element
/// in registers and written once. The expression is generated from the group's IR nodes.
///
/// The kernel uses the IR-driven ABI of emit_util.h: in = GroupIO inputs (activations in their
/// layout, constants plain row-major), out = GroupIO outputs. Activations are either all plain
/// (numpy broadcasting between them) or all NCHW16c of the output's shape (constants broadcast).
#include <optional>
#include <string>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/schedule.h"

namespace yoloc::codegen::cpu {

/// The workload of one elementwise group.
struct ElementwiseTask {
  GroupIO io;
  Shape shape;           ///< logical shape of every output
  bool blocked = false;  ///< activations and outputs in NCHW16c (shape is 4-D, C % 16 == 0)

  /// e.g. "elementwise_f32 1x64x80x80 nchw16c Sigmoid,Mul".
  std::string key() const;
};

/// The task of an elementwise group, or nullopt when some node is not a supported float32
/// elementwise op (or a Cast between float32 and float16, whose float16 activations are raw
/// 16-bit storage behind the ABI's float pointers), a shape is not static, or the operands'
/// layouts / shapes do not fit.
std::optional<ElementwiseTask> elementwise_task_from_group(const Graph& g, const FusedGroup& group);

/// The elementwise template. Knob: "unroll" (of the innermost loop). Work items are the rows of
/// the physical shape (all dims but the last two), so threads split over channels and rows.
class ElementwiseTemplate {
 public:
  static bool matches(const ElementwiseTask& t);
  static ScheduleSpace space(const ElementwiseTask& t);
  static bool valid(const ElementwiseTask& t, const ScheduleConfig& cfg);
  static ScheduleConfig default_config(const ElementwiseTask& t);
  /// Raises InternalError when the task does not match or cfg is not valid.
  static CpuKernel emit(const ElementwiseTask& t, const ScheduleConfig& cfg,
                        const std::string& symbol);
};

}  // namespace yoloc::codegen::cpu
