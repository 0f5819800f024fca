#include "passes/views.h"

#include <algorithm>
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

/// Whether a reshape view reads v: it addresses v as a dense tensor, so v cannot also lie in a
/// concat buffer as a slice (strided at batch > 1: an NCHW head conv's output, say).
bool reshaped_in_place(const Graph& g, const Value* v) {
  for (const Node* u : g.users(v)) {
    if (is_reshape_like(*u) && u->is_view()) return true;
  }
  return false;
}

/// Whether every value of `vals` lies in `whole`'s memory as a tensor of its own layout: all
/// share the layout, and in a blocked layout (NCHWc) each part is a run of whole channel blocks
/// (a part of 8 channels inside a 16-channel block is interleaved with its neighbour).
bool same_layout_parts(const Value* whole, const std::vector<Value*>& vals) {
  for (const Value* v : vals) {
    if (!v || v->layout != whole->layout) return false;
  }
  if (whole->layout.layout != Layout::kNCHWc) return true;
  const int64_t b = whole->layout.block;
  const auto dims_equal_but_channels = [&](const Value* v) {
    if (v->type.dims.size() != 4 || whole->type.dims.size() != 4) return false;
    for (size_t d : {0u, 2u, 3u})
      if (!(v->type.dims[d] == whole->type.dims[d])) return false;
    return v->type.dims[1].known() && v->type.dims[1].value % b == 0;
  };
  return b > 0 && std::all_of(vals.begin(), vals.end(), dims_equal_but_channels);
}

/// A reshape re-addresses its input in place only between plain layouts, or when it keeps the
/// shape (a blocked layout's element order depends on the shape).
bool reshape_in_place(const Node& n) {
  const Value *x = n.input(0), *y = n.outputs[0];
  if (x->layout != y->layout) return false;
  return x->layout.layout == Layout::kNCHW || x->type.dims == y->type.dims;
}

}  // namespace

bool Views::run(Graph& g, PassContext&) {
  bool changed = false;
  // Split and step-1 Slice: consumers read their slice of the input in place, unless a
  // reshape-like view or the graph output needs the slice contiguous.
  for (Node* n : g.nodes()) {
    if (is_reshape_like(*n) && n->input(0) && !n->input(0)->is_constant() &&
        reshape_in_place(*n)) {
      mark(n);
      changed = true;
      continue;
    }
    if (n->op != "Split" && n->op != "Slice") continue;
    if (n->op == "Slice" && n->input(4) &&
        !(n->input(4)->is_constant() && constant_all_equal(n->input(4)->data, 1.0)))
      continue;
    bool ok = n->input(0) && !n->input(0)->is_constant() &&
              same_layout_parts(n->input(0), n->outputs) &&
              (n->op == "Split" || n->input(0)->layout.layout == Layout::kNCHW);
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
    bool ok = same_layout_parts(n->outputs[0], n->inputs);
    std::set<const Value*> mine;
    std::vector<Node*> split_runs;  // splits whose whole output run lies in this concat
    for (size_t i = 0; ok && i < n->inputs.size();) {
      const Value* in = n->input(i);
      Node* p = in ? in->producer : nullptr;
      if (p && p->op == "Split" && !p->is_view() && p->input(0) &&
          i + p->outputs.size() <= n->inputs.size()) {
        // A split feeding a concat is not a view (above); its outputs in order re-form its input.
        bool run = true;
        for (size_t k = 0; k < p->outputs.size(); ++k) run &= n->input(i + k) == p->outputs[k];
        const Value* src = p->input(0);
        if (run && kernel_written(g, src) && !reshaped_in_place(g, src) && !claimed.count(src) &&
            mine.insert(src).second &&
            p->attrs.get_int("axis", 0) == n->attrs.get_int("axis", 0)) {
          split_runs.push_back(p);
          i += p->outputs.size();
          continue;
        }
        ok = false;
      } else if (kernel_written(g, in) && !reshaped_in_place(g, in) && !claimed.count(in) &&
                 mine.insert(in).second) {
        ++i;
      } else {
        ok = false;
      }
    }
    if (!ok) continue;
    claimed.insert(mine.begin(), mine.end());
    for (Node* p : split_runs) mark(p);  // reads its slices of the concat buffer in place
    mark(n);
    changed = true;
  }
  return changed;
}

}  // namespace yoloc
