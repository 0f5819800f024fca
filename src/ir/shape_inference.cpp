#include "ir/shape_inference.h"

#include "ir/op_registry.h"

namespace yoloc {

namespace {

constexpr int64_t kMaxFoldElements = 4096;

TensorType merge(const TensorType& inferred, const TensorType& declared, const Node& n) {
  if (declared.dtype == DType::kUndefined) return inferred;
  // A stale value_info (some exporters and quantizers leave them) must not override what the op
  // really produces: inferred wins on any conflict.
  if (inferred.dtype != DType::kUndefined && declared.dtype != inferred.dtype) return inferred;
  if (!inferred.has_rank) {
    TensorType t = declared;
    if (t.dtype == DType::kUndefined) t.dtype = inferred.dtype;
    return t;
  }
  TensorType t = inferred;
  if (declared.has_rank && declared.rank() == inferred.rank()) {
    for (size_t i = 0; i < t.dims.size(); ++i)
      if (!t.dims[i].known() && t.dims[i].symbol.empty()) t.dims[i] = declared.dims[i];
  }
  return t;
}

/// Runs the reference implementation of a node whose inputs are all known and whose outputs are
/// small, storing the results in Value::inferred.
void fold(Node& node, const OpDef& def) {
  Node* n = &node;
  bool all_known = true;
  for (const Value* in : n->inputs)
    if (in && !in->known()) all_known = false;
  bool small = true;
  for (const Value* o : n->outputs)
    if (!o->type.is_static() || shape_numel(o->type.static_shape()) > kMaxFoldElements)
      small = false;
  if (all_known && small && !n->inputs.empty()) {
    std::vector<Tensor> ins;
    for (const Value* in : n->inputs) ins.push_back(in ? *in->known() : Tensor());
    std::vector<Tensor> outs = def.reference(*n, ins);
    for (size_t i = 0; i < n->outputs.size() && i < outs.size(); ++i)
      n->outputs[i]->inferred = std::move(outs[i]);
  }
}

/// Stores a symbolic value; one whose elements are all known becomes an inferred value.
void set_symbolic(Value& out, std::optional<std::vector<SymElem>> elems) {
  if (!elems || !is_integer(out.type.dtype) || !out.type.has_rank || out.type.rank() > 1) return;
  if (out.type.rank() == 0 ? elems->size() != 1 : !out.type.is_static() ||
      out.type.dims[0].value != static_cast<int64_t>(elems->size()))
    return;
  std::vector<int64_t> values;
  for (const SymElem& e : *elems)
    if (e.value) values.push_back(*e.value);
  if (values.size() == elems->size()) {
    Shape shape;
    if (out.type.rank() == 1) shape.push_back(static_cast<int64_t>(values.size()));
    out.inferred = Tensor::from_vector<int64_t>(shape, values).cast(out.type.dtype);
  } else {
    out.symbolic = std::move(*elems);
  }
}

}  // namespace

void infer_shapes(Graph& g) {
  for (Node* n : g.nodes()) infer_node(*n);
}

void infer_node(Node& node) {
  Node* n = &node;
  {
    const OpDef& def = *n->def;
    const int nin = static_cast<int>(n->inputs.size());
    if (nin < def.min_inputs || nin > def.max_inputs)
      user_error("{}: expects {} to {} inputs, got {}", n->label(), def.min_inputs,
                 def.max_inputs, nin);
    const int nout = static_cast<int>(n->outputs.size());
    if (nout < def.min_outputs || nout > def.max_outputs)
      user_error("{}: expects {} to {} outputs, got {}", n->label(), def.min_outputs,
                 def.max_outputs, nout);
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      if (!in && static_cast<int>(i) < def.min_inputs)
        user_error("{}: input {} is required, but the node leaves it empty (the model is "
                   "malformed: re-export it)", n->label(), i);
      if (in && in->type.dtype == DType::kUndefined)
        user_error("{}: the type of input {} ('{}') is unknown", n->label(), i, in->name);
    }
    InferContext ctx(*n);
    std::vector<TensorType> types = def.infer(ctx);
    YOLOC_CHECK(types.size() >= n->outputs.size(), "{}: inference gave {} types for {} outputs",
                n->label(), types.size(), n->outputs.size());
    for (size_t i = 0; i < n->outputs.size(); ++i)
      n->outputs[i]->type = merge(types[i], n->outputs[i]->type, *n);

    for (Value* o : n->outputs) o->symbolic.clear();
    // Derive small values: shape sub-graphs become known at compile time.
    if (def.infer_value && n->outputs.size() == 1) {
      Tensor v = def.infer_value(ctx);
      if (v.defined()) n->outputs[0]->inferred = std::move(v);
    } else {
      fold(*n, def);
    }
    if (def.infer_symbolic && n->outputs.size() == 1 && !n->outputs[0]->known())
      set_symbolic(*n->outputs[0], def.infer_symbolic(ctx));
  }
}

}  // namespace yoloc
