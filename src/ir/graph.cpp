#include "ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/op_registry.h"

namespace yoloc {

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::kView: return "view";
    case GroupKind::kAnchor: return "anchor";
    case GroupKind::kElementwise: return "elementwise";
    case GroupKind::kSppf: return "sppf";
    case GroupKind::kDetectTail: return "detect_tail";
    case GroupKind::kOther: return "other";
  }
  return "other";
}

std::vector<const FusedGroup*> Graph::kernel_groups_in_run_order() const {
  std::map<int, const FusedGroup*> by_id;
  for (const FusedGroup& grp : groups) by_id[grp.id] = &grp;
  // Each group at the position of its last node.
  std::map<int, size_t> last;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->group >= 0) last[nodes_[i]->group] = i;
  std::vector<std::pair<size_t, int>> by_last;
  for (const auto& [id, i] : last) by_last.emplace_back(i, id);
  std::sort(by_last.begin(), by_last.end());
  std::vector<const FusedGroup*> out;
  for (const auto& [i, id] : by_last) {
    const auto it = by_id.find(id);
    YOLOC_CHECK(it != by_id.end(), "node group {} is not among the graph's groups", id);
    if (it->second->is_kernel()) out.push_back(it->second);
  }
  return out;
}

std::string Node::label() const {
  return name.empty() ? fmt::format("{} #{}", op, id) : fmt::format("{} '{}'", op, name);
}

std::string Graph::unique_name(const std::string& base) {
  std::string n = base.empty() ? "v" : base;
  if (!by_name_.count(n)) return n;
  // The smallest free suffix, as a probe from 1 would find it: every suffix below the mark is
  // taken (forget_name lowers the mark when one is freed).
  int& mark = taken_below_[n];
  for (int i = std::max(mark, 1);; ++i) {
    std::string c = fmt::format("{}_{}", n, i);
    if (!by_name_.count(c)) {
      mark = i + 1;
      return c;
    }
  }
}

void Graph::forget_name(const std::string& name) {
  by_name_.erase(name);
  const size_t us = name.rfind('_');
  if (us == std::string::npos || us + 1 == name.size() || name.size() - us > 10) return;
  int i = 0;
  for (size_t k = us + 1; k < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9') return;
    i = i * 10 + (name[k] - '0');
  }
  const auto it = taken_below_.find(name.substr(0, us));
  if (it != taken_below_.end() && i < it->second) it->second = i;
}

Value* Graph::add_value(std::string name, TensorType type) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->name = unique_name(name.empty() ? fmt::format("v{}", v->id) : name);
  v->type = std::move(type);
  by_name_[v->name] = v.get();
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::add_constant(std::string name, Tensor data) {
  Value* v = add_value(std::move(name), TensorType::of(data));
  v->data = std::move(data);
  return v;
}

Node* Graph::add_node(const std::string& op, std::vector<Value*> inputs, size_t num_outputs,
                      Attrs attrs, std::string name) {
  std::vector<Value*> outs;
  const std::string base = name.empty() ? op : name;
  for (size_t i = 0; i < num_outputs; ++i)
    outs.push_back(add_value(num_outputs == 1 ? base : fmt::format("{}:{}", base, i)));
  return add_node_with_outputs(op, std::move(inputs), std::move(outs), std::move(attrs),
                               std::move(name));
}

Node* Graph::add_node_with_outputs(const std::string& op, std::vector<Value*> inputs,
                                   std::vector<Value*> outputs, Attrs attrs, std::string name) {
  auto n = std::make_unique<Node>();
  n->id = next_id_++;
  n->op = op;
  n->def = OpRegistry::global().find(op);
  YOLOC_CHECK(n->def != nullptr, "op '{}' is not registered", op);
  n->name = std::move(name);
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  n->attrs = std::move(attrs);
  for (Value* o : n->outputs) {
    YOLOC_CHECK(o->producer == nullptr, "value '{}' already has a producer", o->name);
    o->producer = n.get();
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> r;
  r.reserve(nodes_.size());
  for (const auto& n : nodes_) r.push_back(n.get());
  return r;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> r;
  for (const auto& v : values_) r.push_back(v.get());
  return r;
}

std::vector<Node*> Graph::users(const Value* v) const {
  std::vector<Node*> r;
  for (const auto& n : nodes_)
    if (std::find(n->inputs.begin(), n->inputs.end(), v) != n->inputs.end()) r.push_back(n.get());
  return r;
}

bool Graph::is_output(const Value* v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_)
    for (auto& in : n->inputs)
      if (in == from) in = to;
  for (auto& o : outputs)
    if (o == from) o = to;
}

void Graph::remove_node(Node* n) {
  for (Value* o : n->outputs) {
    YOLOC_CHECK(users(o).empty() && !is_output(o),
                "removing {} whose output '{}' is still used", n->label(), o->name);
    o->producer = nullptr;
  }
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(), [&](auto& p) { return p.get() == n; }));
}

void Graph::detach_node(Node* n) {
  for (Value* o : n->outputs) o->producer = nullptr;
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(), [&](auto& p) { return p.get() == n; }));
}

void Graph::replace_with_constants(Node* n, std::vector<Tensor> data) {
  YOLOC_CHECK(data.size() >= n->outputs.size(), "{}: {} constants for {} outputs", n->label(),
              data.size(), n->outputs.size());
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    Value* o = n->outputs[i];
    o->producer = nullptr;
    o->data = std::move(data[i]);
    o->type = TensorType::of(o->data);
  }
  detach_node(n);
}

size_t Graph::remove_dead() {
  std::unordered_set<const Value*> live(outputs.begin(), outputs.end());
  std::vector<bool> keep(nodes_.size(), false);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const Node* n = nodes_[i].get();
    for (const Value* o : n->outputs)
      if (live.count(o)) keep[i] = true;
    if (keep[i])
      for (const Value* in : n->inputs)
        if (in) live.insert(in);
  }
  size_t removed = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(nodes_[i]));
    } else {
      for (Value* o : nodes_[i]->outputs) o->producer = nullptr;
      ++removed;
    }
  }
  nodes_ = std::move(kept);
  for (const Value* in : inputs) live.insert(in);
  std::vector<std::unique_ptr<Value>> vals;
  for (auto& v : values_) {
    if (live.count(v.get()) || v->producer) {
      vals.push_back(std::move(v));
    } else {
      forget_name(v->name);
    }
  }
  values_ = std::move(vals);
  return removed;
}

void Graph::topo_sort() {
  std::unordered_map<const Value*, size_t> producer_idx;
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (const Value* o : nodes_[i]->outputs) producer_idx[o] = i;
  std::vector<int> state(nodes_.size(), 0);  // 0 new, 1 visiting, 2 done
  std::vector<std::unique_ptr<Node>> order;
  // Depth-first, each node after its producers in input order; an explicit stack (node, next
  // input) instead of recursion, which a chain of 100,000 nodes would overflow.
  std::vector<std::pair<size_t, size_t>> stack;
  for (size_t root = 0; root < nodes_.size(); ++root) {
    if (state[root] != 0) continue;
    state[root] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const std::vector<Value*>& ins = nodes_[i]->inputs;
      if (next < ins.size()) {
        const Value* in = ins[next++];
        const auto it = in ? producer_idx.find(in) : producer_idx.end();
        if (it == producer_idx.end() || state[it->second] == 2) continue;
        if (state[it->second] == 1)
          internal_error("graph has a cycle through {}", nodes_[it->second]->label());
        state[it->second] = 1;
        stack.emplace_back(it->second, 0);
        continue;
      }
      state[i] = 2;
      order.push_back(std::move(nodes_[i]));
      stack.pop_back();
    }
  }
  nodes_ = std::move(order);
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  std::unordered_map<const Value*, Value*> vmap;
  for (const auto& v : values_) {
    Value* nv = g->add_value(v->name, v->type);
    nv->id = v->id;
    nv->data = v->data;
    nv->inferred = v->inferred;
    nv->symbolic = v->symbolic;
    nv->layout = v->layout;
    vmap[v.get()] = nv;
  }
  for (const auto& n : nodes_) {
    std::vector<Value*> ins, outs;
    for (Value* in : n->inputs) ins.push_back(in ? vmap.at(in) : nullptr);
    for (Value* o : n->outputs) outs.push_back(vmap.at(o));
    Node* nn = g->add_node_with_outputs(n->op, ins, outs, n->attrs, n->name);
    nn->id = n->id;
    nn->group = n->group;
  }
  g->next_id_ = next_id_;  // ids are kept, so FusedGroup::anchor stays valid
  g->groups = groups;
  for (Value* v : inputs) g->inputs.push_back(vmap.at(v));
  for (Value* v : outputs) g->outputs.push_back(vmap.at(v));
  g->metadata = metadata;
  g->opset = opset;
  g->name = name;
  g->producer = producer;
  return g;
}

}  // namespace yoloc
