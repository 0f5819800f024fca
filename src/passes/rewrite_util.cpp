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

}  // namespace yoloc
