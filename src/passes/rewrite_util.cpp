#include "passes/rewrite_util.h"

#include <algorithm>

namespace yoloc {

bool constant_all_equal(const Tensor& t, double x) {
  if (!t.defined() || t.dtype() == DType::kBool) return false;
  for (double v : t.to_doubles())
    if (v != x) return false;
  return true;
}

bool forward_output(Graph& g, Node* n, Value* replacement) {
  Value* out = n->outputs.at(0);
  if (g.is_output(out)) return false;
  if (!(out->type == replacement->type)) return false;
  g.replace_all_uses(out, replacement);
  return true;
}

bool Redirects::add(const Graph& g, const Value* from, Value* to) {
  if (g.is_output(from) || !(from->type == to->type)) return false;
  to_[from] = resolve(to);
  return true;
}

Value* Redirects::resolve(Value* v) const {
  const auto it = to_.find(v);
  return it == to_.end() ? v : it->second;
}

bool Redirects::apply(Node& n) const {
  bool changed = false;
  for (Value*& in : n.inputs) {
    if (!in) continue;
    Value* r = resolve(in);
    changed |= r != in;
    in = r;
  }
  return changed;
}

}  // namespace yoloc
