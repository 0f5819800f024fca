#include "ir/pattern.h"

#include "ir/op_registry.h"

namespace yoloc {

Pattern Pattern::any(std::string capture) {
  Pattern p;
  p.capture_ = std::move(capture);
  return p;
}

Pattern Pattern::constant(std::string capture) {
  Pattern p;
  p.kind_ = Kind::kConstant;
  p.capture_ = std::move(capture);
  return p;
}

Pattern Pattern::op(std::string op, std::vector<Pattern> inputs, std::string capture) {
  Pattern p;
  p.kind_ = Kind::kOp;
  p.op_ = std::move(op);
  p.inputs_ = std::move(inputs);
  p.capture_ = std::move(capture);
  return p;
}

Pattern Pattern::with_traits(uint32_t traits, std::vector<Pattern> inputs, std::string capture) {
  Pattern p;
  p.kind_ = Kind::kTraits;
  p.traits_ = traits;
  p.inputs_ = std::move(inputs);
  p.capture_ = std::move(capture);
  return p;
}

Value* Match::value(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : it->second;
}

Node* Match::node(const std::string& name) const {
  auto it = nodes.find(name);
  return it == nodes.end() ? nullptr : it->second;
}

Matcher::Matcher(const Graph& g) {
  for (const Node* n : g.nodes())
    for (const Value* in : n->inputs)
      if (in) ++uses_[in];
  for (const Value* o : g.outputs) uses_[o] += 2;  // a graph output is never single-use
}

size_t Matcher::use_count(const Value* v) const {
  auto it = uses_.find(v);
  return it == uses_.end() ? 0 : it->second;
}

bool Matcher::match(const Pattern& p, Value* v, Match* m) const {
  Match local;
  if (!match_rec(p, v, local)) return false;
  if (m) *m = std::move(local);
  return true;
}

bool Matcher::match_rec(const Pattern& p, Value* v, Match& m) const {
  if (!v) return false;
  if (p.single_use_ && use_count(v) != 1) return false;
  if (!p.capture_.empty()) {
    auto it = m.values.find(p.capture_);
    if (it != m.values.end() && it->second != v) return false;
  }
  switch (p.kind_) {
    case Pattern::Kind::kAny: break;
    case Pattern::Kind::kConstant:
      if (!v->is_constant()) return false;
      break;
    case Pattern::Kind::kOp:
    case Pattern::Kind::kTraits: {
      Node* n = v->producer;
      if (!n || n->outputs.empty() || n->outputs[0] != v) return false;
      if (p.kind_ == Pattern::Kind::kOp ? n->op != p.op_
                                        : (n->def->traits & p.traits_) != p.traits_)
        return false;
      if (p.inputs_.size() > n->inputs.size()) return false;
      auto try_order = [&](bool swap) {
        Match trial = m;
        for (size_t i = 0; i < p.inputs_.size(); ++i) {
          const size_t src = swap && p.inputs_.size() == 2 ? 1 - i : i;
          if (!match_rec(p.inputs_[i], n->input(src), trial)) return false;
        }
        m = std::move(trial);
        return true;
      };
      if (!try_order(false) && !(p.commutative_ && p.inputs_.size() == 2 && try_order(true)))
        return false;
      if (!p.capture_.empty()) m.nodes[p.capture_] = n;
      break;
    }
  }
  if (!p.capture_.empty()) m.values[p.capture_] = v;
  return true;
}

}  // namespace yoloc
