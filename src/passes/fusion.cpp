#include "passes/fusion.h"

#include <fmt/format.h>

#include <set>
#include <unordered_map>

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

bool is_anchor(const Node* n) { return n->def->has(kTraitAnchor); }
bool is_pointwise(const Node* n) {
  return n->def->has(kTraitElementwise) || n->def->has(kTraitInjective);
}

class Partitioner {
 public:
  explicit Partitioner(Graph& g) : g_(g) {
    for (Node* n : g.nodes())
      for (Value* in : n->inputs)
        if (in) users_[in].push_back(n);
  }

  const std::vector<Node*>& users(const Value* v) {
    static const std::vector<Node*> kNone;
    auto it = users_.find(v);
    return it == users_.end() ? kNone : it->second;
  }

  int new_group(GroupKind kind, const Node* anchor) {
    FusedGroup grp;
    grp.id = static_cast<int>(g_.groups.size());
    grp.kind = kind;
    grp.anchor = anchor ? anchor->id : -1;
    g_.groups.push_back(grp);
    return grp.id;
  }

  /// The detect-head tail: the nodes that feed only the graph outputs, back to the last
  /// feature-map convolutions. An anchor joins only when it reads decoded head data (the DFL
  /// convolution after the softmax).
  void detect_tail() {
    std::set<Node*> tail;
    // An output nothing reads is fine when another one is used (TopK's values when only its
    // indices are read): the tail computes it for nobody.
    auto feeds_only_tail = [&](const Node* n) {
      bool used = false;
      // A graph output read by a node outside the tail too (an intermediate value made an
      // output, `compile --outputs`) keeps its producer out: the tail runs last.
      for (const Value* o : n->outputs) {
        used = used || g_.is_output(o) || !users(o).empty();
        for (Node* u : users(o))
          if (!tail.count(u)) return false;
      }
      return used;
    };
    // An anchor belongs to the tail when it reads decoded head data (a softmax, reshape or
    // concat of the head) rather than a feature map (the epilogue of another anchor).
    // Quantize ops in between (a dynamically quantized DFL convolution) are looked through.
    auto reads_head_data = [&](const Node* n) {
      const Value* in = n->input(0);
      const Node* p = in ? in->producer : nullptr;
      while (p && !is_anchor(p) && p->def->has(kTraitQuant)) {
        in = p->input(0);
        p = in ? in->producer : nullptr;
      }
      return p && !is_anchor(p) && !p->def->has(kTraitElementwise);
    };
    const std::vector<Node*> nodes = g_.nodes();
    for (bool grew = true; grew;) {
      grew = false;
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        Node* n = *it;
        if (tail.count(n) || !feeds_only_tail(n)) continue;
        if (!is_anchor(n)) {
          tail.insert(n);
          grew = true;
          continue;
        }
        if (!tail.empty() && reads_head_data(n)) {
          tail.insert(n);
          grew = true;
        }
      }
    }
    if (tail.size() < 2) return;
    const int id = new_group(GroupKind::kDetectTail, nullptr);
    for (Node* n : tail) n->group = id;
  }

  /// SPPF: x -> MaxPool -> MaxPool -> MaxPool, Concat(x, p1, p2, p3): one kernel. The SPP of
  /// YOLOX (three parallel pools of x) is fused the same way.
  void sppf() {
    for (Node* c : g_.nodes()) {
      if (c->op != "Concat" || c->group >= 0 || c->inputs.size() != 4) continue;
      std::vector<Node*> pools;
      bool ok = true;
      for (size_t i = 1; i < 4 && ok; ++i) {
        Node* p = c->input(i)->producer;
        ok = p && p->op == "MaxPool" && p->group < 0 &&
             (p->input(0) == c->input(i - 1) || p->input(0) == c->input(0));
        if (ok) pools.push_back(p);
      }
      if (!ok) continue;
      const int id = new_group(GroupKind::kSppf, pools[0]);
      for (Node* p : pools) p->group = id;
      c->group = id;
    }
  }

  /// Anchor + epilogue: follow the anchor's output through single-use pointwise consumers.
  void anchors() {
    for (Node* n : g_.nodes()) {
      if (n->group >= 0 || !is_anchor(n)) continue;
      const int id = new_group(GroupKind::kAnchor, n);
      n->group = id;
      Node* last = n;
      while (last->outputs.size() == 1 && !g_.is_output(last->outputs[0])) {
        const auto& us = users(last->outputs[0]);
        if (us.size() != 1) break;
        Node* u = us[0];
        if (u->group >= 0 || u->is_view() || !u->def->has(kTraitElementwise)) break;
        u->group = id;
        last = u;
      }
    }
  }

  /// Scalar arithmetic (a quantization scale product, say) is computed inline by its consumer.
  void scalar_prologues() {
    const std::vector<Node*> nodes = g_.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (n->group >= 0 || !n->def->has(kTraitElementwise) || n->outputs.size() != 1) continue;
      const Value* o = n->outputs[0];
      if (!o->type.is_static() || shape_numel(o->type.static_shape()) != 1) continue;
      const auto& us = users(o);
      if (us.size() == 1 && us[0]->group >= 0 && !g_.is_output(o)) n->group = us[0]->group;
    }
  }

  /// Whether `in` is the only value group `id` makes for outside: a kernel runs after its last
  /// node, so a group that joins a later node must not hold back values others read before.
  bool single_exit(int id, const Value* in) {
    for (Node* m : g_.nodes()) {
      if (m->group != id) continue;
      for (const Value* o : m->outputs) {
        if (o == in) continue;
        if (g_.is_output(o)) return false;
        for (const Node* u : users(o))
          if (u->group != id) return false;
      }
    }
    return true;
  }

  /// What is left: views need no kernel; pointwise chains share one; the rest is one each.
  void rest() {
    for (Node* n : g_.nodes()) {
      if (n->group >= 0) continue;
      if (n->is_view()) {
        n->group = new_group(GroupKind::kView, nullptr);
        continue;
      }
      if (is_pointwise(n)) {
        const Value* in = n->input(0);
        const Node* p = in ? in->producer : nullptr;
        if (p && p->group >= 0 && g_.groups[static_cast<size_t>(p->group)].kind == GroupKind::kElementwise &&
            users(in).size() == 1 && !g_.is_output(in) && single_exit(p->group, in)) {
          n->group = p->group;
          continue;
        }
        n->group = new_group(GroupKind::kElementwise, nullptr);
        continue;
      }
      n->group = new_group(GroupKind::kOther, n);
    }
  }

  /// Names each group after its ops, e.g. "Conv+SiLU+Add".
  void name_groups() {
    for (Node* n : g_.nodes()) {
      FusedGroup& grp = g_.groups[static_cast<size_t>(n->group)];
      if (grp.kind == GroupKind::kDetectTail || grp.kind == GroupKind::kSppf) {
        grp.name = group_kind_name(grp.kind);
      } else {
        grp.name += (grp.name.empty() ? "" : "+") + n->op;
      }
    }
  }

 private:
  Graph& g_;
  std::unordered_map<const Value*, std::vector<Node*>> users_;
};

}  // namespace

bool Fusion::run(Graph& g, PassContext&) {
  g.groups.clear();
  for (Node* n : g.nodes()) n->group = -1;
  Partitioner p(g);
  p.detect_tail();
  p.sppf();
  p.anchors();
  p.scalar_prologues();
  p.rest();
  p.name_groups();
  return true;
}

}  // namespace yoloc
