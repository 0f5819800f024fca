#include "passes/views.h"

#include <set>

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

void mark(Node* n) { n->attrs.set(kViewAttr, int64_t{1}); }

/// A value a kernel writes, so it can be placed inside a concat buffer.
bool kernel_written(const Graph& g, const Value* v) {
  return v && v->producer && !v->producer->is_view() && !g.is_output(v);
}

/// Reshape-like ops re-address contiguous memory and never need a copy.
bool is_reshape_like(const Node& n) { return n.def->has(kTraitReshape); }

}  // namespace

bool Views::run(Graph& g, PassContext&) {
  bool changed = false;
  // Split and step-1 Slice: consumers read their slice of the input in place, unless a
  // reshape-like view or the graph output needs the slice contiguous.
  for (Node* n : g.nodes()) {
    if (is_reshape_like(*n) && n->input(0) && !n->input(0)->is_constant()) {
      mark(n);
      changed = true;
      continue;
    }
    if (n->op != "Split" && n->op != "Slice") continue;
    if (n->op == "Slice" && n->input(4) &&
        !(n->input(4)->is_constant() && constant_all_equal(n->input(4)->data, 1.0)))
      continue;
    bool ok = n->input(0) && !n->input(0)->is_constant();
    for (const Value* o : n->outputs) {
      if (g.is_output(o)) ok = false;
      for (const Node* u : g.users(o)) ok &= !is_reshape_like(*u) && u->op != "Concat";
    }
    if (ok) {
      mark(n);
      changed = true;
    }
  }
  // Concat: every input is written by its producer straight into its slice of the concat
  // buffer. An input may be a kernel output, or a complete, in-order run of a view Split's
  // outputs (then the split's input is what lies in the buffer). No value may be claimed twice.
  std::set<const Value*> claimed;
  for (Node* n : g.nodes()) {
    if (n->op != "Concat") continue;
    bool ok = true;
    std::set<const Value*> mine;
    for (size_t i = 0; ok && i < n->inputs.size();) {
      const Value* in = n->input(i);
      const Node* p = in ? in->producer : nullptr;
      if (p && p->op == "Split" && !p->is_view() && p->input(0) &&
          i + p->outputs.size() <= n->inputs.size()) {
        // A split feeding a concat is not a view (above); its outputs in order re-form its input.
        bool run = true;
        for (size_t k = 0; k < p->outputs.size(); ++k) run &= n->input(i + k) == p->outputs[k];
        const Value* src = p->input(0);
        if (run && kernel_written(g, src) && !claimed.count(src) && mine.insert(src).second &&
            p->attrs.get_int("axis", 0) == n->attrs.get_int("axis", 0)) {
          i += p->outputs.size();
          continue;
        }
        ok = false;
      } else if (kernel_written(g, in) && !claimed.count(in) && mine.insert(in).second) {
        ++i;
      } else {
        ok = false;
      }
    }
    if (!ok) continue;
    claimed.insert(mine.begin(), mine.end());
    for (const Value* in : n->inputs) {
      Node* p = in->producer;
      if (p->op == "Split") mark(p);  // reads its slices of the concat buffer in place
    }
    mark(n);
    changed = true;
  }
  return changed;
}

}  // namespace yoloc
