#pragma once
/// The generic OpenCL template: any fused group of the ops below, generated from the group's IR
/// (what the fast templates do not take: the detect tail, elementwise chains, Concat / Split /
/// Slice / Transpose / Reshape rearrangements, nearest Resize, Softmax, MatMul (attention), and
/// Conv / MaxPool of any shape), so every model compiles and runs from the start.
///
/// One work item per output element: each value of the group is an expression over its logical
/// (ONNX) indices; elementwise and view-like nodes are inlined into their consumer (index
/// arithmetic), Conv, MaxPool, MatMul and Softmax become loops inside the element's computation. A
/// MaxPool of a stride-1 "same" MaxPool is one pool with the composed window (SPPF's chain costs
/// 5x5, 9x9 and 13x13 windows, not nested loops). Each output of the group is one launch.
/// fp32 values; an int64 value or an op not listed is refused (with the reason).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "codegen/opencl/cl_kernel.h"
#include "ir/graph.h"

namespace yoloc::codegen::opencl {

/// Element strides of a stored value's logical dims where it lies (dense row-major, or the
/// image stride of the root it is a channel slice of).
using StridesOf = std::function<std::vector<int64_t>(const Value*)>;

struct GenericTask {
  std::vector<const Node*> nodes;    ///< the group's nodes, graph order
  std::vector<const Value*> inputs;  ///< activations then constants (cpu::group_io order)
  std::vector<const Value*> outputs;
  std::vector<std::vector<int64_t>> strides;  ///< per input then per output (empty: constant)
  std::string body_hash;                      ///< of the generated code: part of the key

  /// "cl_generic <ops> <hash of the code and operand strides>".
  std::string key() const;
};

/// The task of `grp`, or nullopt (with the reason in `why`) when a node is not supported.
std::optional<GenericTask> generic_task_from_group(const Graph& g, const FusedGroup& grp,
                                                   const StridesOf& strides_of,
                                                   std::string* why = nullptr);

class GenericTemplate {
 public:
  /// Knob "local": work-group size (1-D).
  static ScheduleSpace space(const GenericTask& t);
  static bool valid(const GenericTask& t, const ScheduleConfig& cfg);
  static ScheduleConfig default_config(const GenericTask& t);
  /// Launch i is named prefix + "_" + i (one per output).
  static ClLowered emit(const GenericTask& t, const ScheduleConfig& cfg, const std::string& prefix);
};

}  // namespace yoloc::codegen::opencl
