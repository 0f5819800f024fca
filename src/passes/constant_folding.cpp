#include "passes/constant_folding.h"

#include "ir/op_registry.h"

namespace yoloc {

namespace {

/// Outputs larger than this stay computed at run time: folding would only bloat the artifact
/// (a ConstantOfShape or Expand of a large shape, say).
constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

bool foldable(const Node& n) {
  if (n.inputs.empty()) return false;
  for (const Value* in : n.inputs)
    if (in && !in->is_constant()) return false;
  for (const Value* o : n.outputs)
    if (o->type.is_static() && shape_numel(o->type.static_shape()) > kMaxFoldedElements)
      return false;
  return true;
}

}  // namespace

bool ConstantFolding::run(Graph& g, PassContext&) {
  bool changed = false;
  for (Node* n : g.nodes()) {
    std::vector<Tensor> values;
    bool all_inferred = !n->outputs.empty();
    for (const Value* o : n->outputs) all_inferred &= o->inferred.defined();
    if (all_inferred) {
      for (const Value* o : n->outputs) values.push_back(o->inferred);
    } else if (foldable(*n)) {
      std::vector<Tensor> args;
      for (const Value* in : n->inputs) args.push_back(in ? in->data : Tensor());
      values = n->def->reference(*n, args);
    } else {
      continue;
    }
    g.replace_with_constants(n, std::move(values));
    changed = true;
  }
  return changed;
}

}  // namespace yoloc
