#include "ir/verifier.h"

#include <unordered_set>

#include "ir/op_registry.h"

namespace yoloc {

void verify(const Graph& g) {
  std::unordered_set<const Value*> defined(g.inputs.begin(), g.inputs.end());
  for (const Value* v : g.values())
    if (v->is_constant()) defined.insert(v);
  for (const Node* n : g.nodes()) {
    YOLOC_CHECK(n->def && n->def == OpRegistry::global().find(n->op), "{}: unregistered op",
                n->label());
    const int nin = static_cast<int>(n->inputs.size());
    YOLOC_CHECK(nin >= n->def->min_inputs && nin <= n->def->max_inputs,
                "{}: {} inputs, schema allows {}..{}", n->label(), nin, n->def->min_inputs,
                n->def->max_inputs);
    for (const Value* in : n->inputs)
      YOLOC_CHECK(!in || defined.count(in), "{}: input '{}' is used before it is defined",
                  n->label(), in ? in->name : "");
    for (const Value* o : n->outputs) {
      YOLOC_CHECK(o->producer == n, "{}: output '{}' has another producer", n->label(), o->name);
      YOLOC_CHECK(!defined.count(o), "{}: output '{}' is defined twice", n->label(), o->name);
      YOLOC_CHECK(o->type.dtype != DType::kUndefined, "{}: output '{}' has no type", n->label(),
                  o->name);
      defined.insert(o);
    }
  }
  for (const Value* o : g.outputs)
    YOLOC_CHECK(defined.count(o), "graph output '{}' is never produced", o->name);
}

}  // namespace yoloc
