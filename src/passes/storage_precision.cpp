#include "passes/storage_precision.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "passes/layout_selection.h"

namespace yoloc {

namespace {

bool is_4d(const Value* v) { return v && v->type.has_rank && v->type.rank() == 4; }

/// The operands a view node shares its buffer with: a Concat's inputs, another view's data input.
std::vector<const Value*> view_sources(const Node& n) {
  if (n.op == "Concat") return {n.inputs.begin(), n.inputs.end()};
  return {n.input(0)};
}

}  // namespace

bool StoragePrecision::run(Graph& g, PassContext& ctx) {
  if (!ctx.target.stores_narrow(ctx.precision)) return false;
  DType narrow = DType::kUndefined;
  if (ctx.precision == Precision::kFp16) narrow = DType::kFloat16;
  if (ctx.precision == Precision::kBf16) narrow = DType::kBFloat16;
  if (narrow == DType::kUndefined) return false;
  const std::set<const Value*> io(g.inputs.begin(), g.inputs.end());
  // narrow_io: the graph's inputs, its outputs and every value sharing an output's buffer (the
  // views that assemble it) are narrow, whatever writes them.
  std::set<const Value*> narrow_io;
  // Values that share a buffer through views: one dtype each.
  std::map<const Value*, const Value*> parent;
  const std::function<const Value*(const Value*)> root = [&](const Value* v) {
    const auto it = parent.find(v);
    return it == parent.end() || it->second == v ? v : parent[v] = root(it->second);
  };
  for (const Node* n : g.nodes()) {
    if (!n->is_view()) continue;
    for (const Value* s : view_sources(*n)) {
      if (!s || s->is_constant()) continue;
      for (const Value* o : n->outputs) parent[root(o)] = root(s);
    }
  }
  if (ctx.narrow_io) {
    std::set<const Value*> out_roots;
    for (const Value* o : g.outputs) out_roots.insert(root(o));
    for (const Value* v : g.values()) {
      if (v->is_constant() || v->type.dtype != DType::kFloat32) continue;
      if (io.count(v) || out_roots.count(root(v))) narrow_io.insert(v);
    }
  }
  // In run order: a value is narrow when a conv template or a kernel of the NHWC region writes
  // it, a view of narrow operands, or a follower of narrow operands (the NCHW region
  // layout_selection gives the detect head's convs). A buffer holding a value that may not be
  // narrow keeps float32 for all it holds, the narrow writers into it included (`wide`).
  std::set<const Value*> wide, is_narrow;
  for (bool again = true; again;) {
    again = false;
    is_narrow.clear();
    for (const Value* v : narrow_io)
      if (!wide.count(v)) is_narrow.insert(v);
    const auto narrow_operands = [&](const Node& n, const auto& operands) {
      bool any = false;
      for (const Value* in : operands) {
        if (!in || in->is_constant() || (!n.is_view() && !is_4d(in))) continue;
        if (!is_narrow.count(in)) return false;
        any = true;
      }
      return any;
    };
    for (const Node* n : g.nodes()) {
      for (const Value* o : n->outputs) {
        if (!o || o->type.dtype != DType::kFloat32 || g.is_output(o) || io.count(o) ||
            wide.count(o) || narrow_io.count(o))
          continue;
        bool yes = false;
        if (n->is_view()) {
          yes = narrow_operands(*n, view_sources(*n));
        } else {
          yes = o->layout.layout == Layout::kNHWC || (n->op == "Conv" && is_4d(o)) ||
                (is_4d(o) && follows_operand_layout(*n) && narrow_operands(*n, n->inputs));
        }
        if (yes) is_narrow.insert(o);
      }
    }
    // Every value of a buffer narrow, or none.
    std::map<const Value*, bool> all_narrow;
    for (const Value* v : g.values()) {
      if (v->is_constant()) continue;
      const auto [it, fresh] = all_narrow.emplace(root(v), true);
      it->second &= is_narrow.count(v) > 0;
    }
    for (const Value* v : is_narrow) {
      if (!all_narrow.at(root(v)) && wide.insert(v).second) again = true;
    }
  }
  bool changed = false;
  for (Value* v : g.values()) {
    if (!is_narrow.count(v)) continue;
    v->type.dtype = narrow;
    changed = true;
  }
  return changed;
}

}  // namespace yoloc
