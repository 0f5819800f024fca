#pragma once
/// ONNX -> IR converters: one per ONNX op, keyed by (op_type, since_version). The importer picks,
/// for a model of opset N, the converter with the largest since_version <= N. A converter turns
/// one ONNX node into IR nodes in canonical form (the newest opset's form: attributes that older
/// opsets had are turned into the inputs newer ones take).
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/macros.h"
#include "ir/graph.h"

namespace yoloc::onnx_frontend {

/// What a converter sees: the ONNX node (its inputs resolved to IR values) and the graph.
class ConvertContext {
 public:
  ConvertContext(Graph& g, const onnx::NodeProto& node, int64_t opset, std::vector<Value*> inputs,
                 Attrs attrs, std::vector<std::string> output_names,
                 const std::map<std::string, TensorType>& declared);

  Graph& graph;
  const onnx::NodeProto& proto;
  const int64_t opset;

  const std::string& op_type() const { return proto.op_type(); }
  const std::string& node_name() const { return proto.name(); }
  size_t num_inputs() const { return inputs_.size(); }
  /// Input i, or nullptr when absent or given as "".
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const Attrs& attrs() const { return attrs_; }
  size_t num_outputs() const { return output_names_.size(); }

  /// Emits the node that produces the ONNX node's outputs (bound to their names). Every emitted
  /// node is type-inferred at once, so later converters can read their inputs' types.
  Node* emit(const std::string& op, std::vector<Value*> inputs, Attrs attrs);
  /// Emits an intermediate node with fresh outputs.
  Node* emit_internal(const std::string& op, std::vector<Value*> inputs, Attrs attrs,
                      size_t num_outputs = 1);
  /// Emits the ONNX node unchanged: same op name, inputs and attributes.
  Node* passthrough() { return emit(op_type(), inputs_, attrs_); }
  /// Makes the ONNX node's output i an alias of an existing value (for ops that vanish).
  void alias_output(size_t i, Value* v);
  /// A new constant value.
  Value* constant(const Tensor& t, const std::string& hint = "const");
  /// Raises a UserError naming the node and opset.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    user_error("{} node '{}' (opset {}): {}", op_type(), node_name(), opset,
               fmt::format(f, std::forward<Args>(args)...));
  }

  /// Filled by emit/alias_output: the IR value of each ONNX output name.
  std::map<std::string, Value*> produced;

 private:
  std::vector<Value*> inputs_;
  Attrs attrs_;
  std::vector<std::string> output_names_;
  const std::map<std::string, TensorType>& declared_;
};

using ConverterFn = std::function<void(ConvertContext&)>;

class ConverterRegistry {
 public:
  static ConverterRegistry& global();
  bool add(const std::string& op_type, int since_version, ConverterFn fn);
  /// The converter for op_type at `opset`, or nullptr. `min_since` receives the smallest
  /// since_version registered (0 if the op is unknown).
  const ConverterFn* find(const std::string& op_type, int64_t opset, int* min_since) const;
  /// All ONNX op types with a converter, sorted.
  std::vector<std::string> op_types() const;

 private:
  std::map<std::string, std::map<int, ConverterFn>> table_;
};

/// A converter that emits the node unchanged (the ONNX op and the IR op agree).
void convert_passthrough(ConvertContext& ctx);

/// A new constant holding `v` as a 1-D int64 tensor (the axes, pads, starts... that older opsets
/// gave as attributes).
Value* ints_constant(ConvertContext& ctx, const std::vector<int64_t>& v, const std::string& hint);

/// The present inputs of a variadic op (Sum, Mean, Max, Min); a UserError when there are none.
std::vector<Value*> variadic_inputs(const ConvertContext& ctx);

/// `values` (at least one) combined left to right with the binary IR op `op`, in intermediate
/// nodes.
Value* chain_internal(ConvertContext& ctx, const std::string& op,
                      const std::vector<Value*>& values);

}  // namespace yoloc::onnx_frontend

/// Registers a converter: `YOLOC_REGISTER_CONVERTER("Split", 13, convert_split_13);`.
#define YOLOC_REGISTER_CONVERTER(op_type, since, fn)                                  \
  static const bool YOLOC_CONCAT(yoloc_conv_registered_, __COUNTER__) [[maybe_unused]] = \
      ::yoloc::onnx_frontend::ConverterRegistry::global().add(op_type, since, fn)
