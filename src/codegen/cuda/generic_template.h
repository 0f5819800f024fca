#pragma once
/// The generic CUDA template: every fused group the conv and SPPF templates do not take (the
/// detect tail, nearest Resize, elementwise chains, depthwise / grouped convs, YOLOX's Focus
/// slices, attention blocks with MatMul and Softmax; SPPF's max-pool chain where the SPPF
/// template refuses it), as a few kernels generated from the group's IR.
///
/// Each value of the group is an expression over its logical (ONNX) indices. Elementwise and
/// view-like nodes (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose, Slice, Split,
/// Concat, nearest Resize, broadcasting) are index arithmetic inlined into their consumer; Conv,
/// MatMul and pooling become a loop inside the consumer's element computation (a MaxPool of a
/// stride-1 "same" MaxPool is one pool with the composed window, so SPPF's chain costs 5x5, 9x9
/// and 13x13 windows, not nested loops; ReduceMax / ReduceMin loop over their reduced dims).
/// int64 values (indices and their Div / Mod / Cast arithmetic, as the reference executor and
/// the CPU tail compute them) are integer expressions; Gather, GatherElements and Tile are index
/// arithmetic too. A value is materialised, in scratch as dense fp32 (int64: two floats an
/// element), only where inlining would nest loops (a loop node reading a loop node), for the
/// in-group consumers of a Softmax, and around a TopK (its input and both outputs). A launch
/// computes every value that is ready at its level: one thread per output element (a Softmax:
/// per row; a TopK: per input element, which counts the elements of its row ordered before it
/// and lands at that rank when it is under K), the elements of all the launch's roots laid end
/// to end, each root walked in the physical order of what it writes (the innermost stride
/// fastest, so NHWC writes are coalesced along channels). The yolov8n detect tail is two launches
/// (Softmax of the DFL, then the whole output), the yolov10n end-to-end tail seven; a depthwise
/// conv, SPPF's three pools, a Resize or an elementwise chain are one.
///
/// Kernel ABI: every launch of a group is an extern "C" __global__ function with the parameters
///   (const void* in_0, ..., const float* const_0, ..., void* out_0, ..., void* scratch)
/// in GenericTask order. Operands must not overlap (outputs may share a buffer when their
/// elements are disjoint, as the channel slices of a concat). Values are computed in fp32 and
/// converted on load and store to each operand's dtype.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// How a kernel operand is addressed: element (i_0..i_{r-1}) of the value's logical (ONNX) shape
/// lies `sum(i_d * strides[d])` elements after the operand pointer, stored as `dtype`
/// (kFloat32, kFloat16 or kBFloat16). NHWC value (N,C,H,W) in a concat buffer of S channels per
/// pixel: strides {H*W*S, 1, W*S, S}; dense NCHW: row-major strides.
struct CudaOperand {
  const Value* value = nullptr;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> strides;
};

/// The dense strides of a value of static shape: NHWC for a 4-D value whose layout is NHWC,
/// row-major otherwise.
std::vector<int64_t> dense_operand_strides(const Value* v);

/// The workload of one group for the generic template.
struct GenericTask {
  std::vector<const Node*> nodes;       ///< the group's nodes, graph order
  std::vector<CudaOperand> inputs;      ///< activations read from outside (cpu::group_io order)
  std::vector<const Value*> constants;  ///< float constants read as arrays (dense float32)
  std::vector<CudaOperand> outputs;     ///< values made for outside (group_io order)

  /// Workload key: "cuda_generic " + the nodes (op, attributes, shapes, baked constants), then
  /// each operand's dtype and strides.
  std::string key() const;
};

/// A task for group `grp` whose operands are described by `operand_of`; nullopt when a node
/// (op, attribute, dtype) is not supported: non-nearest Resize, int64 operands (int64 values
/// live inside the group only), integer constant arrays among others. `why`, when given,
/// receives the reason of a refusal.
std::optional<GenericTask> generic_task_from_group(
    const Graph& g, const FusedGroup& grp,
    const std::function<CudaOperand(const Value*)>& operand_of, std::string* why = nullptr);

/// What GenericTemplate::emit makes for one task.
struct GenericKernels {
  std::string source;                ///< one CUDA source (cuda_prelude() once) with every kernel
  std::vector<CudaKernel> launches;  ///< run in this order; CudaKernel::source left empty
  uint64_t scratch_bytes = 0;        ///< device scratch shared by the launches (intermediates)
};

class GenericTemplate {
 public:
  /// True when every node and operand of t is supported.
  static bool matches(const GenericTask& t);
  /// Knobs: "threads" (block size), "items" (elements per thread, a grid stride apart).
  static ScheduleSpace space(const GenericTask& t);
  /// True when cfg is a point of space(t) and t matches.
  static bool valid(const GenericTask& t, const ScheduleConfig& cfg);
  /// 256 threads, and 1 item per thread unless that makes more than ~64k blocks.
  static ScheduleConfig default_config(const GenericTask& t);
  /// The kernels; launch i is named symbol_prefix + "_" + i. Raises InternalError for an invalid
  /// config or a prefix that is not a C identifier.
  static GenericKernels emit(const GenericTask& t, const ScheduleConfig& cfg,
                             const std::string& symbol_prefix);
};

}  // namespace yoloc::codegen::cuda
