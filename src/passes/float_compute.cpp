#include "passes/float_compute.h"

#include <algorithm>
#include <set>

namespace yoloc {

namespace {

constexpr const char* kFloat32 = "float32";

bool is_half(const TensorType& t) { return t.dtype == DType::kFloat16; }

Attrs cast_to(DType to) {
  Attrs a;
  a.set("to", std::string(dtype_name(to)));
  return a;
}

/// Attributes that make a float16 result from non-float16 operands.
bool widen_attributes(Node& n) {
  bool changed = false;
  if (n.op == "Cast" && n.attrs.get_string("to", "") == dtype_name(DType::kFloat16)) {
    n.attrs.set("to", std::string(kFloat32));
    changed = true;
  }
  if (n.op == "EyeLike" && n.attrs.get_string("dtype", "") == dtype_name(DType::kFloat16)) {
    n.attrs.set("dtype", std::string(kFloat32));
    changed = true;
  }
  if (n.op == "ConstantOfShape" && n.attrs.has("value") &&
      n.attrs.get_tensor("value").dtype() == DType::kFloat16) {
    n.attrs.set("value", n.attrs.get_tensor("value").cast(DType::kFloat32));
    changed = true;
  }
  return changed;
}

/// Reads of the float16 input `x` go through a new Cast to float32.
void widen_input(Graph& g, Value* x) {
  TensorType t = x->type;
  t.dtype = DType::kFloat32;
  Value* wide = g.add_value(x->name + "_fp32", t);
  for (Node* n : g.nodes())
    std::replace(n->inputs.begin(), n->inputs.end(), x, wide);
  g.add_node_with_outputs("Cast", {x}, {wide}, cast_to(DType::kFloat32), x->name + "_to_fp32");
}

/// The float16 output `y` becomes a Cast of a float32 value its producer makes instead.
void narrow_output(Graph& g, Value* y) {
  Node* p = y->producer;
  TensorType t = y->type;
  t.dtype = DType::kFloat32;
  Value* wide = g.add_value(y->name + "_fp32", t);
  std::replace(p->outputs.begin(), p->outputs.end(), y, wide);
  wide->producer = p;
  y->producer = nullptr;
  for (Node* n : g.nodes())
    std::replace(n->inputs.begin(), n->inputs.end(), y, wide);
  g.add_node_with_outputs("Cast", {wide}, {y}, cast_to(DType::kFloat16), y->name + "_to_fp16");
}

}  // namespace

bool FloatCompute::run(Graph& g, PassContext& ctx) {
  // fp16 / bf16 on a target that stores them narrow: the graph computes in float32 and
  // storage_precision then chooses what is stored narrow.
  const bool narrow = (ctx.precision == Precision::kFp16 || ctx.precision == Precision::kBf16) &&
                      ctx.target.stores_narrow(ctx.precision);
  if (ctx.precision != Precision::kFp32 && !narrow) return false;
  bool changed = false;
  for (Node* n : g.nodes()) changed |= widen_attributes(*n);
  const std::set<const Value*> edges(g.inputs.begin(), g.inputs.end());
  for (Value* v : g.values()) {
    if (!is_half(v->type) || edges.count(v) || (g.is_output(v) && v->producer)) continue;
    // A constant output stays as the model has it (there is nothing to compute).
    if (v->is_constant() && g.is_output(v)) continue;
    if (v->is_constant()) v->data = v->data.cast(DType::kFloat32);
    if (v->inferred.defined() && v->inferred.dtype() == DType::kFloat16)
      v->inferred = v->inferred.cast(DType::kFloat32);
    v->type.dtype = DType::kFloat32;
    changed = true;
  }
  for (Value* x : std::vector<Value*>(g.inputs)) {
    // An input that is also an output passes through unchanged.
    if (!is_half(x->type) || g.is_output(x) || g.users(x).empty()) continue;
    widen_input(g, x);
    changed = true;
  }
  std::set<const Value*> narrowed;
  for (Value* y : std::vector<Value*>(g.outputs)) {
    if (!is_half(y->type) || !y->producer || !narrowed.insert(y).second) continue;
    narrow_output(g, y);
    changed = true;
  }
  if (changed) g.topo_sort();
  return changed;
}

}  // namespace yoloc
