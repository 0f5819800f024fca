#include "passes/algebraic_simplify.h"

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

/// The input whose value the node passes through unchanged, or nullptr.
Value* passthrough_input(const Node& n) {
  Value* x = n.input(0);
  if (!x) return nullptr;
  const TensorType& out = n.outputs[0]->type;
  const bool same_static = x->type.is_static() && out.is_static() && x->type == out;
  if (n.op == "Identity") return x;
  if ((n.def->has(kTraitReshape) || n.op == "Expand") && same_static) return x;
  if (n.op == "Cast" && x->type.dtype == out.dtype) return x;
  if (n.op == "Transpose" && n.attrs.has("perm")) {
    const auto perm = n.attrs.get_ints("perm");
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return nullptr;
    return x;
  }
  // x*1, x+0, x-0, x/1 where the constant does not broadcast x to a larger shape.
  if (n.inputs.size() == 2 && same_static) {
    const Value* c = n.input(1);
    if (c && c->is_constant()) {
      if ((n.op == "Mul" || n.op == "Div") && constant_all_equal(c->data, 1.0)) return x;
      if ((n.op == "Add" || n.op == "Sub") && constant_all_equal(c->data, 0.0)) return x;
    }
  }
  return nullptr;
}

/// x / c -> x * (1/c) for a float constant c without zeros.
bool div_to_mul(Graph& g, Node* n) {
  if (n->op != "Div" || !n->input(1) || !n->input(1)->is_constant()) return false;
  const Tensor& c = n->input(1)->data;
  if (!is_float(c.dtype())) return false;
  Tensor r = c.clone();
  bool ok = true;
  dispatch_float(
      r.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* d = r.data<T>();
        for (int64_t i = 0; i < r.numel(); ++i) {
          const double v = static_cast<double>(d[i]);
          if (v == 0.0 || !std::isfinite(v)) ok = false;
          d[i] = static_cast<T>(1.0 / v);
        }
      },
      "div_to_mul");
  if (!ok) return false;
  n->inputs[1] = g.add_constant(n->input(1)->name + "_reciprocal", r);
  n->op = "Mul";
  n->def = OpRegistry::global().find("Mul");
  return true;
}

}  // namespace

bool AlgebraicSimplify::run(Graph& g, PassContext&) {
  bool changed = false;
  Redirects redirects;  // linear on a chain of 100,000 Identity nodes
  for (Node* n : g.nodes()) {
    changed |= redirects.apply(*n);
    if (Value* x = passthrough_input(*n)) {
      changed |= redirects.add(g, n->outputs[0], x);
      continue;
    }
    changed |= div_to_mul(g, n);
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace yoloc
