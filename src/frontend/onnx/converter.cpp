#include "frontend/onnx/converter.h"

#include "ir/op_registry.h"
#include "ir/shape_inference.h"

namespace yoloc::onnx_frontend {

ConvertContext::ConvertContext(Graph& g, const onnx::NodeProto& node, int64_t opset_version,
                               std::vector<Value*> inputs, Attrs attrs,
                               std::vector<std::string> output_names,
                               const std::map<std::string, TensorType>& declared)
    : graph(g),
      proto(node),
      opset(opset_version),
      inputs_(std::move(inputs)),
      attrs_(std::move(attrs)),
      output_names_(std::move(output_names)),
      declared_(declared) {}

Node* ConvertContext::emit(const std::string& op, std::vector<Value*> inputs, Attrs attrs) {
  // Trailing omitted outputs are dropped so ops with optional outputs see only the ones used.
  size_t count = output_names_.size();
  while (count > 1 && output_names_[count - 1].empty()) --count;
  std::vector<Value*> outs;
  for (size_t i = 0; i < count; ++i) {
    const std::string& n = output_names_[i];
    Value* v = graph.add_value(n.empty() ? node_name() + ":unused" : n);
    if (!n.empty()) produced[n] = v;
    auto d = declared_.find(n);
    if (d != declared_.end()) v->type = d->second;
    outs.push_back(v);
  }
  Node* node = graph.add_node_with_outputs(op, std::move(inputs), std::move(outs), std::move(attrs),
                                           node_name());
  infer_node(*node);
  return node;
}

Node* ConvertContext::emit_internal(const std::string& op, std::vector<Value*> inputs, Attrs attrs,
                                    size_t num_outputs) {
  Node* node =
      graph.add_node(op, std::move(inputs), num_outputs, std::move(attrs), node_name() + "/" + op);
  infer_node(*node);
  return node;
}

void ConvertContext::alias_output(size_t i, Value* v) {
  if (i >= output_names_.size())
    fail("names {} output(s); the op has an output {} the model does not name (re-export it)",
         output_names_.size(), i);
  produced[output_names_[i]] = v;
}

Value* ConvertContext::constant(const Tensor& t, const std::string& hint) {
  return graph.add_constant(node_name() + "/" + hint, t);
}

ConverterRegistry& ConverterRegistry::global() {
  static ConverterRegistry r;
  return r;
}

bool ConverterRegistry::add(const std::string& op_type, int since, ConverterFn fn) {
  auto& m = table_[op_type];
  YOLOC_CHECK(!m.count(since), "converter {} since {} registered twice", op_type, since);
  m[since] = std::move(fn);
  return true;
}

const ConverterFn* ConverterRegistry::find(const std::string& op_type, int64_t opset,
                                           int* min_since) const {
  *min_since = 0;
  auto it = table_.find(op_type);
  if (it == table_.end()) return nullptr;
  *min_since = it->second.begin()->first;
  const ConverterFn* best = nullptr;
  for (const auto& [since, fn] : it->second)
    if (since <= opset) best = &fn;
  return best;
}

std::vector<std::string> ConverterRegistry::op_types() const {
  std::vector<std::string> r;
  for (const auto& [k, v] : table_) r.push_back(k);
  return r;
}

void convert_passthrough(ConvertContext& ctx) {
  if (!OpRegistry::global().find(ctx.op_type()))
    internal_error("converter for {} passes through to an unregistered IR op", ctx.op_type());
  ctx.passthrough();
}

Value* ints_constant(ConvertContext& ctx, const std::vector<int64_t>& v, const std::string& hint) {
  return ctx.constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v), hint);
}

std::vector<Value*> variadic_inputs(const ConvertContext& ctx) {
  std::vector<Value*> ins;
  for (Value* v : ctx.inputs())
    if (v) ins.push_back(v);
  if (ins.empty()) ctx.fail("needs at least one input");
  return ins;
}

Value* chain_internal(ConvertContext& ctx, const std::string& op,
                      const std::vector<Value*>& values) {
  Value* acc = values.at(0);
  for (size_t i = 1; i < values.size(); ++i)
    acc = ctx.emit_internal(op, {acc, values[i]}, {})->outputs[0];
  return acc;
}

}  // namespace yoloc::onnx_frontend
