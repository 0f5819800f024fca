#include "passes/canonicalize.h"

#include <cmath>

#include "ir/op_registry.h"
#include "ir/pattern.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

/// Replaces node `n` (keeping its output value) by a node of `op` on `inputs`.
void rewrite(Node* n, const std::string& op, std::vector<Value*> inputs, Attrs attrs = {}) {
  n->op = op;
  n->def = OpRegistry::global().find(op);
  YOLOC_CHECK(n->def, "canonicalize: op {} is not registered", op);
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
}

bool is_standard_hard_sigmoid(const Node* n) {
  return n && std::abs(n->attrs.get_float("alpha", 0.2f) - 1.0f / 6.0f) < 1e-6f &&
         std::abs(n->attrs.get_float("beta", 0.5f) - 0.5f) < 1e-6f;
}

}  // namespace

bool Canonicalize::run(Graph& g, PassContext&) {
  const Pattern silu = Pattern::op("Mul", {Pattern::any("x"), Pattern::op("Sigmoid", {Pattern::any("x")})}).commutative();
  const Pattern hswish =
      Pattern::op("Mul", {Pattern::any("x"), Pattern::op("HardSigmoid", {Pattern::any("x")}, "hs")})
          .commutative();
  bool changed = false;
  Matcher m(g);
  for (Node* n : g.nodes()) {
    Match match;
    if (m.match(silu, n->outputs[0], &match)) {
      rewrite(n, "SiLU", {match.value("x")});
    } else if (m.match(hswish, n->outputs[0], &match) &&
               is_standard_hard_sigmoid(match.node("hs"))) {
      rewrite(n, "HardSwish", {match.value("x")});
    } else if (n->op == "Clip" && n->input(1) && n->input(1)->is_constant() &&
               constant_all_equal(n->input(1)->data, 0.0) && !n->input(2)) {
      rewrite(n, "Relu", {n->input(0)});
    } else if (n->op == "Pow" && n->input(1) && n->input(1)->is_constant() &&
               n->input(1)->data.numel() == 1 && constant_all_equal(n->input(1)->data, 2.0) &&
               is_float(n->input(0)->type.dtype) && n->outputs[0]->type == n->input(0)->type) {
      rewrite(n, "Mul", {n->input(0), n->input(0)});
    } else {
      continue;
    }
    changed = true;
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace yoloc
