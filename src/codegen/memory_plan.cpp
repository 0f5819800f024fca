#include "codegen/memory_plan.h"

#include <algorithm>
#include <optional>
#include <set>

#include "core/error.h"

namespace yoloc {

namespace {


uint64_t align(uint64_t x) { return (x + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

Shape static_shape_of(const Value& v) {
  if (!v.type.is_static())
    user_error(
        "memory planning needs static shapes, but value '{}' has type {}; fix the "
        "dimensions when compiling (--batch, --imgsz)",
        v.name, v.type.str());
  return v.type.static_shape();
}

/// The shape as stored: a blocked layout pads the channels to a multiple of the block.
Shape stored_shape(const Value& v) {
  Shape s = static_shape_of(v);
  if (s.size() == 4 && v.layout.layout == Layout::kNCHWc && v.layout.block > 0)
    s[1] = (s[1] + v.layout.block - 1) / v.layout.block * v.layout.block;
  return s;
}


/// The element offset of logical index `idx` in v's stored layout.
int64_t physical_offset(const Value& v, const std::vector<int64_t>& idx) {
  const Shape s = stored_shape(v);
  if (s.size() == 4 && v.layout.layout == Layout::kNHWC)
    return ((idx[0] * s[2] + idx[2]) * s[3] + idx[3]) * s[1] + idx[1];
  if (s.size() == 4 && v.layout.layout == Layout::kNCHWc && v.layout.block > 0) {
    const int64_t b = v.layout.block;
    return (((idx[0] * (s[1] / b) + idx[1] / b) * s[2] + idx[2]) * s[3] + idx[3]) * b + idx[1] % b;
  }
  int64_t off = 0;
  for (size_t i = 0; i < s.size(); ++i) off = off * s[i] + idx[i];
  return off;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

/// How a view value lies in the value it aliases: at `start` (a logical index of the parent, for
/// slices of the same rank), or re-addressing the whole parent (reshapes: no start).
struct Link {
  const Value* parent = nullptr;
  std::optional<std::vector<int64_t>> start;
};

/// Where a value lies in the root of its aliases. Slice positions are tracked as a logical
/// index into a frame: a value laid out densely from element `base` of the root (the root
/// itself, or a reshape of a dense region).
struct Resolved {
  const Value* root = nullptr;
  const Value* frame = nullptr;               ///< nullptr when no dense frame is known
  int64_t base = 0;                           ///< element offset of the frame in the root
  std::optional<std::vector<int64_t>> index;  ///< logical index in the frame
  int64_t offset = 0;                         ///< element offset of its first element
  bool contiguous = true;
};

std::vector<int64_t> at_axis(size_t rank, int64_t axis, int64_t pos) {
  std::vector<int64_t> idx(rank, 0);
  idx[axis] = pos;
  return idx;
}

/// The parent links of all view values: reshape-like views alias their input, Split/Slice view
/// outputs alias a slice of it, and a Concat view's inputs (or the source of a run of Split
/// outputs) alias their slice of the concat output.
std::map<const Value*, Link> view_links(const Graph& g) {
  std::map<const Value*, Link> links;
  for (const Node* n : g.nodes()) {
    if (!n->is_view() || n->inputs.empty() || !n->input(0)) continue;
    if (n->op == "Concat") {
      const Value* out = n->outputs[0];
      const size_t rank = static_shape_of(*out).size();
      const int64_t axis = normalize_axis(n->attrs.get_int("axis", 0), rank);
      int64_t pos = 0;
      for (size_t i = 0; i < n->inputs.size();) {
        const Value* in = n->inputs[i];
        const Node* p = in->producer;
        if (p && p->op == "Split" && p->is_view() && p->input(0) && p->outputs[0] == in) {
          // A run of a split's outputs: the split's source lies in the buffer.
          links[p->input(0)] = {out, at_axis(rank, axis, pos)};
          pos += static_shape_of(*p->input(0))[axis];
          i += p->outputs.size();
          continue;
        }
        links[in] = {out, at_axis(rank, axis, pos)};
        pos += static_shape_of(*in)[axis];
        ++i;
      }
    } else if (n->op == "Split") {
      const Value* in = n->input(0);
      const size_t rank = static_shape_of(*in).size();
      const int64_t axis = normalize_axis(n->attrs.get_int("axis", 0), rank);
      int64_t pos = 0;
      for (const Value* o : n->outputs) {
        links[o] = {in, at_axis(rank, axis, pos)};
        pos += static_shape_of(*o)[axis];
      }
    } else if (n->op == "Slice") {
      const Value* in = n->input(0);
      const Shape s = static_shape_of(*in);
      std::optional<std::vector<int64_t>> start;
      const Tensor* starts = n->input(1) ? n->input(1)->known() : nullptr;
      const Tensor* axes = n->input(3) ? n->input(3)->known() : nullptr;
      if (starts && (!n->input(3) || axes)) {
        start = std::vector<int64_t>(s.size(), 0);
        const auto st = starts->to_int64s();
        const auto ax = axes ? axes->to_int64s() : std::vector<int64_t>();
        for (size_t k = 0; k < st.size(); ++k) {
          const int64_t a = axes ? normalize_axis(ax.at(k), s.size()) : static_cast<int64_t>(k);
          const int64_t v = st[k] < 0 ? st[k] + s[a] : st[k];
          (*start)[a] = std::clamp<int64_t>(v, 0, s[a]);
        }
      }
      links[n->outputs[0]] = {in, start};
    } else {
      links[n->outputs[0]] = {n->input(0), std::nullopt};
    }
  }
  return links;
}

Resolved resolve(const Value* v, const std::map<const Value*, Link>& links,
                 std::map<const Value*, Resolved>& memo) {
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  Resolved r;
  auto it = links.find(v);
  if (it == links.end()) {
    r.root = r.frame = v;
    r.index = std::vector<int64_t>(static_shape_of(*v).size(), 0);
    memo[v] = r;
    return r;
  }
  const Link& l = it->second;
  const Resolved p = resolve(l.parent, links, memo);
  r.root = p.root;
  if (l.start && p.index && l.start->size() == p.index->size()) {
    std::vector<int64_t> idx = *p.index, last(idx.size());
    const Shape s = static_shape_of(*v);
    for (size_t i = 0; i < idx.size(); ++i) {
      idx[i] += (*l.start)[i];
      last[i] = idx[i] + std::max<int64_t>(s[i] - 1, 0);
    }
    r.frame = p.frame;
    r.base = p.base;
    r.index = idx;
    r.offset = p.base + physical_offset(*p.frame, idx);
    r.contiguous = p.base + physical_offset(*p.frame, last) - r.offset + 1 == shape_numel(s);
  } else if (!l.start && p.contiguous && l.parent->layout == v->layout) {
    // A reshape of a dense region re-addresses it: a new frame for slices of the reshape.
    r.frame = v;
    r.base = p.offset;
    r.index = std::vector<int64_t>(static_shape_of(*v).size(), 0);
    r.offset = p.offset;
  } else {
    // A reshape of a strided or differently laid out region, or a slice whose start is not
    // known: it lies inside its parent, but not as a dense range.
    r.offset = p.offset;
    r.contiguous = false;
  }
  memo[v] = r;
  return r;
}

/// The fused kernel (a group, or a merged set of groups named by `unit`, whose inner values are
/// never stored) that produces and consumes v entirely (so v is never stored), or -1.
int enclosing_kernel(const Graph& g, const Value* v, const std::set<int>& kernels,
                     const std::map<int, int>& unit) {
  const auto kernel_of = [&](int group) {
    const auto it = unit.find(group);
    return it == unit.end() ? group : it->second;
  };
  const Node* p = v->producer;
  const std::vector<Node*> users = g.users(v);
  if (!p || !kernels.count(p->group) || g.is_output(v) || users.empty()) return -1;
  for (const Node* u : users)
    if (kernel_of(u->group) != kernel_of(p->group)) return -1;
  return kernel_of(p->group);
}

/// The nodes that touch an allocation's bytes (by index in the graph's node order).
struct Access {
  std::set<int> writers;  ///< nodes storing a value into it (view nodes write nothing)
  std::set<int> touch;    ///< the writers and every node reading a value of it
};

/// Ancestors of each node through the data (bit j of row i: node j's outputs reach node i).
class Ancestry {
 public:
  /// `index`: each node's position in `nodes`.
  Ancestry(const std::vector<Node*>& nodes, const std::map<const Node*, int>& index)
      : words_((nodes.size() + 63) / 64) {
    bits_.assign(nodes.size() * words_, 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const Value* v : nodes[i]->inputs) {
        if (!v || !v->producer) continue;
        const auto j = static_cast<size_t>(index.at(v->producer));
        for (size_t w = 0; w < words_; ++w) bits_[i * words_ + w] |= bits_[j * words_ + w];
        bits_[i * words_ + j / 64] |= uint64_t{1} << (j % 64);
      }
    }
  }
  bool reaches(int from, int to) const {
    const auto f = static_cast<size_t>(from), t = static_cast<size_t>(to);
    return (bits_[t * words_ + f / 64] >> (f % 64)) & 1;
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

/// Whether `later` (alive only after `earlier` died) may take earlier's bytes under kOrdered:
/// every node touching `earlier` reaches every node writing `later`.
bool ordered(const Access& earlier, const Access& later, const Ancestry& anc) {
  for (int w : later.writers)
    for (int t : earlier.touch)
      if (!anc.reaches(t, w)) return false;
  return true;
}

/// First-fit: the lowest aligned offset where allocation `a` overlaps no placed allocation it
/// conflicts with (`conflict(a, p)`).
template <typename Conflict>
uint64_t first_fit(int a_index, const std::vector<Allocation>& all, const std::vector<int>& placed,
                   Conflict conflict) {
  const Allocation& a = all[static_cast<size_t>(a_index)];
  std::vector<const Allocation*> live;
  for (int p : placed)
    if (conflict(a_index, p)) live.push_back(&all[static_cast<size_t>(p)]);
  std::sort(live.begin(), live.end(),
            [](const Allocation* x, const Allocation* y) { return x->offset < y->offset; });
  uint64_t offset = 0;
  for (const Allocation* p : live) {
    if (offset + a.bytes <= p->offset) break;
    offset = std::max(offset, align(p->offset + p->bytes));
  }
  return offset;
}

}  // namespace

uint64_t stored_bytes(const Value& v) {
  return static_cast<uint64_t>(shape_numel(stored_shape(v))) * dtype_size(v.type.dtype);
}

MemoryPlan plan_memory(const Graph& g, const std::vector<MergedGroups>& merged, Reuse reuse,
                       const std::vector<Redirect>& redirects) {
  MemoryPlan plan;
  const std::vector<Node*> nodes = g.nodes();
  std::map<const Node*, int> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) node_index[nodes[i]] = static_cast<int>(i);
  // The kernel of each merged group: the set's first group; `unit` only of the sets whose
  // inner values are never stored.
  std::map<int, int> kernel, unit;
  for (const MergedGroups& set : merged) {
    for (int grp : set.groups) {
      kernel[grp] = set.groups.front();
      if (set.internal) unit[grp] = set.groups.front();
    }
  }
  const auto kernel_of = [&](int group) {
    const auto it = kernel.find(group);
    return it == kernel.end() ? group : it->second;
  };
  // A fused kernel reads all its inputs and writes all its outputs in one go, so its nodes
  // share one span of time: from the first to the last node of its group (or merged groups).
  std::map<int, std::pair<int, int>> kernel_span;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->group < 0) continue;
    const int t = static_cast<int>(i);
    auto& sp = kernel_span.try_emplace(kernel_of(nodes[i]->group), t, t).first->second;
    sp.first = std::min(sp.first, t);
    sp.second = std::max(sp.second, t);
  }
  std::map<int, std::pair<int, int>> group_span;
  for (const Node* n : nodes)
    if (n->group >= 0) group_span[n->group] = kernel_span.at(kernel_of(n->group));
  std::map<const Node*, std::pair<int, int>> span;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int t = static_cast<int>(i);
    span[nodes[i]] = nodes[i]->group < 0 ? std::pair(t, t) : group_span.at(nodes[i]->group);
  }
  const int end = static_cast<int>(nodes.size());

  const auto links = view_links(g);
  std::set<int> kernels;
  for (const FusedGroup& grp : g.groups)
    if (grp.is_kernel()) kernels.insert(grp.id);
  // An alias class is never stored when all its values live inside the same fused kernel.
  std::map<const Value*, Resolved> memo;
  std::map<const Value*, int> class_kernel;  // root -> kernel id, or -1
  for (const Node* n : nodes) {
    for (const Value* v : n->outputs) {
      if (!v || v->is_constant()) continue;
      plan.naive_bytes += stored_bytes(*v);
      const int k = enclosing_kernel(g, v, kernels, unit);
      auto [it, added] = class_kernel.try_emplace(resolve(v, links, memo).root, k);
      if (!added && it->second != k) it->second = -1;
    }
  }
  std::map<const Value*, int> alloc_of;  // root -> allocation index
  std::vector<const Value*> stored;      // the values in the arena
  std::vector<Access> access;            // per allocation
  for (const Node* n : nodes) {
    for (const Value* v : n->outputs) {
      if (!v || v->is_constant()) continue;
      const Resolved& r = memo.at(v);
      ValueSlot slot;
      slot.bytes = stored_bytes(*v);
      slot.contiguous = r.contiguous;
      if (r.root->is_constant()) {
        slot.placement = Placement::kConstant;
      } else if (!r.root->producer) {
        slot.placement = Placement::kInput;
        const auto in = std::find(g.inputs.begin(), g.inputs.end(), r.root);
        slot.input = in == g.inputs.end() ? -1 : static_cast<int>(in - g.inputs.begin());
        slot.offset = static_cast<uint64_t>(r.offset) * dtype_size(r.root->type.dtype);
      } else if (class_kernel.at(r.root) >= 0 ||
                 std::any_of(redirects.begin(), redirects.end(),
                             [&](const Redirect& d) { return d.from == v; })) {
        slot.placement = Placement::kInternal;
      }
      if (slot.placement == Placement::kArena) {
        auto [it, added] = alloc_of.try_emplace(r.root, static_cast<int>(plan.allocations.size()));
        if (added) {
          Allocation a;
          a.value = r.root->name;
          a.bytes = stored_bytes(*r.root);
          a.first = span.at(r.root->producer).first;
          a.last = span.at(r.root->producer).second;
          plan.allocations.push_back(a);
          access.emplace_back();
        }
        Allocation& a = plan.allocations[it->second];
        Access& acc = access[static_cast<size_t>(it->second)];
        // A view node writes nothing: inside a fused group its span would start the buffer's
        // life at the group's first node, before the kernel that writes the buffer.
        if (!n->is_view()) {
          a.first = std::min(a.first, span.at(n).first);
          acc.writers.insert(node_index.at(n));
        }
        acc.touch.insert(node_index.at(n));
        a.last = std::max(a.last, span.at(n).second);
        for (const Node* u : g.users(v)) {
          a.last = std::max(a.last, span.at(u).second);
          acc.touch.insert(node_index.at(u));
        }
        if (g.is_output(v)) a.last = end;
        // Written earlier by the kernels redirecting their outputs into it.
        for (const Redirect& d : redirects) {
          if (d.into != v) continue;
          a.first = std::min(a.first, group_span.at(d.group).first);
          for (size_t i = 0; i < nodes.size(); ++i) {
            if (nodes[i]->group >= 0 && kernel_of(nodes[i]->group) == kernel_of(d.group)) {
              acc.writers.insert(static_cast<int>(i));
              acc.touch.insert(static_cast<int>(i));
            }
          }
        }
        slot.allocation = it->second;
        slot.offset = static_cast<uint64_t>(r.offset) * dtype_size(r.root->type.dtype);
        stored.push_back(v);
      }
      plan.values[v->name] = slot;
    }
  }

  std::vector<int> by_size;
  for (size_t i = 0; i < plan.allocations.size(); ++i) {
    plan.unshared_bytes += align(plan.allocations[i].bytes);
    by_size.push_back(static_cast<int>(i));
  }
  std::stable_sort(by_size.begin(), by_size.end(), [&](int x, int y) {
    return plan.allocations[static_cast<size_t>(x)].bytes >
           plan.allocations[static_cast<size_t>(y)].bytes;
  });
  std::optional<Ancestry> ancestry;
  if (reuse == Reuse::kOrdered) ancestry.emplace(nodes, node_index);
  const auto conflict = [&](int x, int y) {
    const Allocation &a = plan.allocations[static_cast<size_t>(x)],
                     &b = plan.allocations[static_cast<size_t>(y)];
    if (a.first <= b.last && b.first <= a.last) return true;
    if (!ancestry) return false;
    const bool a_first = a.last < b.first;
    const Access& earlier = access[static_cast<size_t>(a_first ? x : y)];
    const Access& later = access[static_cast<size_t>(a_first ? y : x)];
    return !ordered(earlier, later, *ancestry);
  };
  std::vector<int> placed;
  for (int a : by_size) {
    Allocation& alloc = plan.allocations[static_cast<size_t>(a)];
    alloc.offset = first_fit(a, plan.allocations, placed, conflict);
    plan.arena_bytes = std::max(plan.arena_bytes, align(alloc.offset + alloc.bytes));
    placed.push_back(a);
  }
  for (const Value* v : stored) {
    ValueSlot& slot = plan.values[v->name];
    slot.offset += plan.allocations[slot.allocation].offset;
  }
  return plan;
}

void verify_memory_plan(const MemoryPlan& plan) {
  const auto& as = plan.allocations;
  for (size_t i = 0; i < as.size(); ++i) {
    YOLOC_CHECK(as[i].offset % kArenaAlignment == 0,
                "allocation '{}' at offset {} is not {}-byte "
                "aligned",
                as[i].value, as[i].offset, kArenaAlignment);
    YOLOC_CHECK(as[i].offset + as[i].bytes <= plan.arena_bytes,
                "allocation '{}' [{}, {}) ends "
                "past the {}-byte arena",
                as[i].value, as[i].offset, as[i].offset + as[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < as.size(); ++j) {
      const Allocation &a = as[i], &b = as[j];
      const bool live_together = a.first <= b.last && b.first <= a.last;
      const bool overlap = a.bytes > 0 && b.bytes > 0 && a.offset < b.offset + b.bytes &&
                           b.offset < a.offset + a.bytes;
      YOLOC_CHECK(!(live_together && overlap),
                  "'{}' [{}, {}) alive over nodes {}..{} overlaps "
                  "'{}' [{}, {}) alive over nodes {}..{}",
                  a.value, a.offset, a.offset + a.bytes, a.first, a.last, b.value, b.offset,
                  b.offset + b.bytes, b.first, b.last);
    }
  }
  for (const auto& [name, slot] : plan.values) {
    if (slot.placement != Placement::kArena) continue;
    YOLOC_CHECK(slot.allocation >= 0 && slot.allocation < static_cast<int>(as.size()),
                "value '{}' names no allocation", name);
    const Allocation& a = as[slot.allocation];
    YOLOC_CHECK(slot.offset >= a.offset && slot.offset <= a.offset + a.bytes &&
                    (!slot.contiguous || slot.offset + slot.bytes <= a.offset + a.bytes),
                "value '{}' at [{}, {}) lies outside its allocation '{}' [{}, {})", name,
                slot.offset, slot.offset + slot.bytes, a.value, a.offset, a.offset + a.bytes);
  }
}

nlohmann::json memory_plan_to_json(const MemoryPlan& plan) {
  nlohmann::json allocs = nlohmann::json::array();
  for (const Allocation& a : plan.allocations)
    allocs.push_back({{"value", a.value},
                      {"offset", a.offset},
                      {"bytes", a.bytes},
                      {"first", a.first},
                      {"last", a.last}});
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [name, slot] : plan.values) {
    if (slot.placement != Placement::kArena) continue;
    values[name] = {{"allocation", slot.allocation},
                    {"offset", slot.offset},
                    {"bytes", slot.bytes},
                    {"contiguous", slot.contiguous}};
  }
  return {{"alignment", kArenaAlignment},    {"arena_bytes", plan.arena_bytes},
          {"naive_bytes", plan.naive_bytes}, {"unshared_bytes", plan.unshared_bytes},
          {"allocations", allocs},           {"values", values}};
}

}  // namespace yoloc
