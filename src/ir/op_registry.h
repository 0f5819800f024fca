#pragma once
/// The op registry: one OpDef per op, registered once from its file in src/ops/. An OpDef holds
/// the op's schema (input/output counts), traits that passes query instead of op names, type and
/// shape inference, and the plain reference implementation that is the oracle for every backend.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/macros.h"
#include "ir/graph.h"

namespace yoloc {

/// Op traits (a bit set). Passes ask these, never op names.
enum OpTrait : uint32_t {
  kTraitNone = 0,
  kTraitElementwise = 1u << 0,      ///< output[i] depends on input[i] only (with broadcasting)
  kTraitInjective = 1u << 1,        ///< a pure data movement / index mapping (reshape, slice...)
  kTraitReduction = 1u << 2,        ///< reduces over axes
  kTraitAnchor = 1u << 3,           ///< a fusion anchor: conv, pool, matmul, resize
  kTraitLayoutSensitive = 1u << 4,  ///< semantics depend on the NCHW layout
  kTraitQuant = 1u << 5,            ///< quantize / dequantize / integer arithmetic
  kTraitShape = 1u << 6,            ///< computes on shapes (Shape, Range, ConstantOfShape...)
  kTraitCommutative = 1u << 7,      ///< binary op with a op b == b op a
  kTraitReshape = 1u << 8,          ///< only re-reads contiguous data with another shape
};

/// What an inference function sees of a node.
class InferContext {
 public:
  explicit InferContext(const Node& n) : node(n) {}
  const Node& node;
  size_t num_inputs() const { return node.inputs.size(); }
  bool has_input(size_t i) const { return node.has_input(i); }
  /// Type of input i (an undefined, unranked type if omitted).
  const TensorType& type(size_t i) const;
  /// The value of input i when it is known at compile time (a constant or inferred), else null.
  const Tensor* value(size_t i) const;
  /// The elements of input i when it is an integer tensor of rank <= 1 known at compile time,
  /// fully (value()) or symbolically (Value::symbolic); nullopt otherwise.
  std::optional<std::vector<SymElem>> symbolic(size_t i) const;
  const Attrs& attrs() const { return node.attrs; }
  /// Raises a UserError that names the node: "<op> '<name>': <message>".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    user_error("{}: {}", node.label(), fmt::format(f, std::forward<Args>(args)...));
  }
};

/// Type and shape inference: one TensorType per output. Dims that cannot be known are left
/// unknown (or symbolic when they follow from a symbolic input dim).
using InferFn = std::function<std::vector<TensorType>(const InferContext&)>;
/// The reference implementation: inputs (undefined Tensor for an omitted optional input) to
/// outputs. Simple and obviously correct rather than fast.
using ReferenceFn = std::function<std::vector<Tensor>(const Node&, const std::vector<Tensor>&)>;

struct OpDef {
  std::string name;
  uint32_t traits = kTraitNone;
  int min_inputs = 1;
  int max_inputs = 1;
  int min_outputs = 1;
  int max_outputs = 1;
  InferFn infer;
  ReferenceFn reference;
  /// Optional: the output value when it follows from input types alone (Shape, Size), so shape
  /// sub-graphs fold even when their input data is not known.
  std::function<Tensor(const InferContext&)> infer_value;
  /// Optional: the elements of the single output when its data is not known but follows
  /// symbolically from the inputs (Value::symbolic), for shape sub-graphs over symbolic dims;
  /// nullopt when it does not.
  std::function<std::optional<std::vector<SymElem>>(const InferContext&)> infer_symbolic;
  /// Optional: multiply-add counted as 2 FLOPs, for `yoloc inspect` (needs static shapes).
  std::function<int64_t(const Node&)> flops;
  std::string doc;  ///< one line: what the op computes

  bool has(OpTrait t) const { return (traits & t) != 0; }
};

class OpRegistry {
 public:
  static OpRegistry& global();
  /// Registers an op; a second registration of the same name is an InternalError.
  bool add(OpDef def);
  const OpDef* find(const std::string& name) const;
  /// All registered op names, sorted.
  std::vector<std::string> names() const;

 private:
  std::map<std::string, OpDef> ops_;
};

}  // namespace yoloc

/// Registers an OpDef at static-initialisation time: `YOLOC_REGISTER_OP(make_conv_def());`.
#define YOLOC_REGISTER_OP(def_expr)                                              \
  static const bool YOLOC_CONCAT(yoloc_op_registered_, __COUNTER__) [[maybe_unused]] = \
      ::yoloc::OpRegistry::global().add(def_expr)
