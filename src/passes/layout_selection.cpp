#include "passes/layout_selection.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

bool is_4d(const Value* v) { return v && v->type.has_rank && v->type.rank() == 4; }

/// Whether a 4-D value with this channel count can be stored in `l`.
bool fits(const Value* v, const LayoutSpec& l) {
  if (!is_4d(v)) return false;
  if (l.layout != Layout::kNCHWc) return true;
  const Dim& c = v->type.dims[1];
  return c.known() && c.value % l.block == 0;
}

/// Ops whose result does not depend on how their operands are laid out, as long as all
/// operands agree: elementwise ops and the (global) quantization of activations.
bool layout_agnostic(const Node& n) {
  return n.def->has(kTraitElementwise) ||
         (n.def->has(kTraitQuant) && !n.def->has(kTraitAnchor));
}

/// Concat / Split along channels keep a blocked or channels-last layout when every part fits.
bool channel_data_movement(const Node& n) {
  if (n.op != "Concat" && n.op != "Split") return false;
  const Value* ref = n.op == "Concat" ? n.outputs[0] : n.input(0);
  if (!is_4d(ref)) return false;
  const int64_t axis = n.attrs.get_int("axis", 0);
  return axis == 1 || axis == -3;
}

/// The layout the node reads its data inputs in (kNCHW when it needs NCHW).
LayoutSpec consumer_layout(const Node& n) {
  if (n.outputs.empty() || !is_4d(n.outputs[0])) return {};
  if (n.def->has(kTraitLayoutSensitive) || layout_agnostic(n) || channel_data_movement(n))
    return n.outputs[0]->layout;
  return {};
}

// ---- CUDA: channel-major detect-head outputs ------------------------------------------------
//
// On CUDA every conv writes NHWC. The detect head's last convs (YOLOv8's cv2 / cv3 1x1 convs) are
// read only by the detect tail, a kernel whose threads walk what it writes: YOLOv8 / 11 / 10
// write [B, 84, anchors] with the anchors innermost, so consecutive threads read consecutive
// pixels of one channel, 64 or 80 channels apart in NHWC: one 32-byte sector per 2-byte read.
// Such a conv stores its output NCHW instead (its epilogue writes channel planes), and the tail
// reads along the planes. YOLOv5 and YOLOX write [B, anchors, 85] with the channels innermost:
// for them NHWC is the coalesced layout, and they keep it.
//
// Which values: a region of NHWC values that kernels exchange only among themselves and with
// readers of NCHW. It starts at the outputs of dense convs (groups 1: the conv templates write
// NCHW in their epilogue) and takes the ops that follow their operands' layout (elementwise,
// channel concat / split), closed so that no value of it is read by a conv, pool or resize (they
// want NHWC) or by a follower that stays NHWC, and no follower in it has an operand outside it.
// The region goes NCHW when its readers do better so: from each edge into an NCHW reader, the
// reads are followed through index-only ops (reshapes, transposes, slices, concats, elementwise)
// to where a kernel walks them (a graph output, a Softmax's rows, a reduction's outputs, a conv's
// pixels), and the 32-byte sectors that 32 consecutive threads touch are counted in either
// layout, weighted by the elements read that way.

/// How one axis of a value the readers compute walks the region's value v: a step of one along
/// it is a step of `step` along axis `src` of v (0..3: N, C, H, W), or no move in v (src -1: a
/// broadcast, or an axis the analysis cannot follow).
struct AxisWalk {
  int src = -1;
  int64_t step = 0;
};
using Walk = std::vector<AxisWalk>;

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

/// A reshape keeps the row-major order: a step along output axis d moves the flat index by its
/// stride, a step along the input axis with the largest stride not above it.
Walk reshape_walk(const Walk& in, const Shape& from, const Shape& to) {
  const std::vector<int64_t> fs = row_major_strides(from), ts = row_major_strides(to);
  Walk out(to.size());
  for (size_t d = 0; d < to.size(); ++d) {
    std::optional<size_t> j;
    for (size_t k = from.size(); k-- > 0;) {
      if (from[k] > 1 && fs[k] <= ts[d]) j = k;
    }
    if (to[d] > 1 && j && ts[d] % fs[*j] == 0 && in[*j].src >= 0)
      out[d] = {in[*j].src, in[*j].step * (ts[d] / fs[*j])};
  }
  return out;
}

/// The axes a Softmax or reduction computes over (its threads walk the others); nullopt when
/// they are not known.
std::optional<std::vector<bool>> reduced_axes(const Node& n, size_t rank) {
  const auto norm = [rank](int64_t a) { return a < 0 ? a + static_cast<int64_t>(rank) : a; };
  std::vector<bool> mask(rank, false);
  std::vector<int64_t> axes;
  if (n.op == "Softmax") {
    axes = {n.attrs.get_int("axis", -1)};
  } else if (n.op == "ArgMax" || n.op == "ArgMin") {
    axes = {n.attrs.get_int("axis", 0)};
  } else if (n.input(1)) {
    if (!n.input(1)->known()) return std::nullopt;
    axes = n.input(1)->known()->to_int64s();
  } else {
    if (n.attrs.get_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
    mask.assign(rank, true);
  }
  for (int64_t a : axes) {
    if (norm(a) < 0 || norm(a) >= static_cast<int64_t>(rank)) return std::nullopt;
    mask[static_cast<size_t>(norm(a))] = true;
  }
  return mask;
}

/// The sectors the readers of a region touch: per layout, sectors per warp-wide read times the
/// elements read that way.
struct ReadCost {
  double nchw = 0, nhwc = 0;
};

/// Follows the reads of the 4-D value v (an edge into a reader of NCHW) to the kernels that walk
/// them, and adds their cost.
class ReadTracer {
 public:
  ReadTracer(const Graph& g, const Value* v, ReadCost& cost)
      : g_(g), dims_(v->type.static_shape()), esize_(dtype_size(v->type.dtype)), cost_(cost) {}

  /// The reads of v's reader u.
  void follow(const Node& u, const Value* v) {
    Walk w;
    for (int a = 0; a < 4; ++a) w.push_back({a, 1});
    step(u, v, w);
  }

 private:
  static constexpr int kBudget = 512;  // ops followed from one edge

  void visit(const Value* t, const Walk& w) {
    if (!seen_.insert(t).second || --budget_ < 0) return;
    if (g_.is_output(t)) walked(t, w, std::vector<bool>(w.size(), false));
    for (const Node* u : g_.users(t)) step(*u, t, w);
  }

  // Node u reading t (walked by w).
  void step(const Node& u, const Value* t, const Walk& w) {
    const Value* y = u.outputs.empty() ? nullptr : u.outputs[0];
    if (!y || !t->type.is_static() || !y->type.is_static()) return;
    const Shape ts = t->type.static_shape(), ys = y->type.static_shape();
    if (u.def->has(kTraitReshape)) {
      visit(y, reshape_walk(w, ts, ys));
    } else if (u.op == "Transpose") {
      std::vector<int64_t> perm(ts.size());
      std::iota(perm.rbegin(), perm.rend(), 0);
      perm = u.attrs.get_ints("perm", perm);
      if (perm.size() != ts.size()) return;
      Walk out;
      for (int64_t p : perm) out.push_back(w.at(static_cast<size_t>(p)));
      visit(y, out);
    } else if (u.def->has(kTraitElementwise)) {
      // Broadcasting aligns the trailing axes; an axis t broadcasts along does not move in t.
      if (ys.size() < ts.size()) return;
      Walk out(ys.size());
      const size_t lead = ys.size() - ts.size();
      for (size_t d = lead; d < ys.size(); ++d) {
        if (ts[d - lead] == ys[d]) out[d] = w[d - lead];
      }
      visit(y, out);
    } else if (u.op == "Concat" || u.op == "Split" ||
               (u.op == "Slice" && (!u.input(4) || (u.input(4)->is_constant() &&
                                                    constant_all_equal(u.input(4)->data, 1.0))))) {
      // Parts keep their axes.
      for (const Value* o : u.outputs) {
        if (o && o->type.dims.size() == ts.size()) visit(o, w);
      }
    } else if (u.op == "Softmax" || u.def->has(kTraitReduction)) {
      if (const auto mask = reduced_axes(u, ts.size())) walked(t, w, *mask);
    } else if (u.op == "Conv" && ts.size() == 4 && u.input(0) == t) {
      walked(t, w, {false, true, false, false});  // per output pixel and channel
    }
  }

  // A kernel's threads walk t's axes but those of `skipped` in row-major order (the innermost
  // fastest): the sectors of v one warp reads in either layout, times t's elements.
  void walked(const Value* t, const Walk& w, const std::vector<bool>& skipped) {
    const Shape s = t->type.static_shape();
    std::set<int64_t> nchw, nhwc;
    for (int64_t lane = 0; lane < 32; ++lane) {
      int64_t rest = lane;
      int64_t at[4] = {0, 0, 0, 0};
      for (size_t d = s.size(); d-- > 0 && rest > 0;) {
        if (skipped[d] || s[d] <= 1) continue;
        if (w[d].src >= 0) at[w[d].src] += rest % s[d] * w[d].step;
        rest /= s[d];
      }
      if (rest > 0 && lane > 0) break;  // fewer threads than a warp
      const int64_t c = dims_[1], h = dims_[2], wd = dims_[3];
      nchw.insert((((at[0] * c + at[1]) * h + at[2]) * wd + at[3]) * esize_ / 32);
      nhwc.insert((((at[0] * h + at[2]) * wd + at[3]) * c + at[1]) * esize_ / 32);
    }
    const auto elements = static_cast<double>(shape_numel(s));
    cost_.nchw += elements * static_cast<double>(nchw.size());
    cost_.nhwc += elements * static_cast<double>(nhwc.size());
  }

  const Graph& g_;
  const Shape dims_;
  const int64_t esize_;
  ReadCost& cost_;
  std::set<const Value*> seen_;
  int budget_ = kBudget;
};

bool all_outputs_in(const Node& n, const std::set<const Value*>& s) {
  return std::all_of(n.outputs.begin(), n.outputs.end(),
                     [&](const Value* o) { return s.count(o) > 0; });
}

/// The NHWC values of g that are better stored NCHW (TargetAttributes::channel_major_nchw): see
/// above.
std::vector<Value*> channel_major_values(const Graph& g) {
  std::set<const Value*> region;
  for (const Node* n : g.nodes()) {
    const bool dense_conv = n->op == "Conv" && n->attrs.get_int("group", 1) == 1;
    for (const Value* o : n->outputs) {
      if (o && o->layout.layout == Layout::kNHWC && o->type.is_static() &&
          (dense_conv || follows_operand_layout(*n)))
        region.insert(o);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    const auto drop = [&](const Value* v) { changed |= region.erase(v) > 0; };
    for (const Node* n : g.nodes()) {
      const bool follower = follows_operand_layout(*n);
      const bool stays_nhwc = follower && !all_outputs_in(*n, region) &&
                              std::any_of(n->outputs.begin(), n->outputs.end(), [](const Value* o) {
                                return o->layout.layout == Layout::kNHWC;
                              });
      bool operands_in = true;
      for (const Value* in : n->inputs) {
        if (!in || in->is_constant() || !is_4d(in)) continue;
        operands_in &= region.count(in) > 0;
        if (n->def->has(kTraitLayoutSensitive) || stays_nhwc) drop(in);
      }
      if (follower && !operands_in) {
        for (const Value* o : n->outputs) drop(o);
      }
    }
  }
  // The connected parts of the region (joined through its followers), each decided alone.
  std::map<const Value*, const Value*> parent;
  const std::function<const Value*(const Value*)> find = [&](const Value* v) {
    const Value* p = parent.count(v) ? parent[v] : v;
    return p == v ? v : parent[v] = find(p);
  };
  for (const Node* n : g.nodes()) {
    if (!follows_operand_layout(*n) || !all_outputs_in(*n, region)) continue;
    for (const Value* x : n->inputs) {
      if (!x || !region.count(x)) continue;
      for (const Value* o : n->outputs) parent[find(o)] = find(x);
    }
  }
  std::map<const Value*, ReadCost> costs;
  for (const Value* v : region) {
    ReadCost& cost = costs[find(v)];
    for (const Node* u : g.users(v)) {
      if (!(follows_operand_layout(*u) && all_outputs_in(*u, region)))
        ReadTracer(g, v, cost).follow(*u, v);
    }
  }
  std::vector<Value*> out;
  for (Node* n : g.nodes()) {
    for (Value* o : n->outputs) {
      if (!region.count(o)) continue;
      const ReadCost& c = costs[find(o)];
      if (c.nchw < c.nhwc) out.push_back(o);
    }
  }
  return out;
}

}  // namespace

bool follows_operand_layout(const Node& n) {
  return layout_agnostic(n) || channel_data_movement(n);
}

bool LayoutSelection::run(Graph& g, PassContext& ctx) {
  const LayoutSpec want = ctx.target.layout;
  if (want == LayoutSpec{}) return false;
  std::map<const Value*, LayoutSpec> before;
  for (const Value* v : g.values()) before[v] = v->layout;
  for (Node* n : g.nodes()) {
    for (Value* o : n->outputs) {
      LayoutSpec l;
      if (n->def->has(kTraitLayoutSensitive) && n->def->has(kTraitAnchor) && fits(o, want)) {
        l = want;
      } else if ((layout_agnostic(*n) || channel_data_movement(*n)) && fits(o, want)) {
        // Follow the non-constant 4-D operands when they agree and every part fits.
        bool agree = true, any = false;
        for (const Value* in : n->inputs) {
          if (!in || in->is_constant() || !is_4d(in)) continue;
          any = true;
          agree &= in->layout == want && fits(in, want);
        }
        if (any && agree) l = want;
      }
      if (g.is_output(o)) l = {};
      o->layout = l;
    }
  }
  if (ctx.target.channel_major_nchw) {
    for (Value* v : channel_major_values(g)) v->layout = {};
  }
  bool changed = false;
  for (const Value* v : g.values()) changed |= before.count(v) && before.at(v) != v->layout;
  return changed;
}

size_t count_layout_conversions(const Graph& g) {
  size_t n = 0;
  for (const Node* node : g.nodes()) {
    const LayoutSpec reads = consumer_layout(*node);
    for (const Value* in : node->inputs)
      if (in && !in->is_constant() && is_4d(in) && in->layout != reads) ++n;
  }
  return n;
}

}  // namespace yoloc
