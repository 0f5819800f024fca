#include "passes/combine_parallel_conv.h"

#include <cstring>
#include <map>

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

std::string attrs_key(const Attrs& a) {
  std::string key;
  for (const auto& [name, v] : a.all()) key += ";" + name + "=" + attr_str(v);
  return key;
}

/// The geometry that must agree for two convolutions to be combined, or "" if `n` cannot be.
std::string combine_key(const Node& n) {
  if (n.op != "Conv" || n.attrs.get_int("group", 1) != 1) return "";
  const Value* w = n.input(1);
  if (!w || !w->is_constant() || !is_float(w->data.dtype())) return "";
  if (n.input(2) && !n.input(2)->is_constant()) return "";
  // The output-channel count may differ; the rest of the weight shape must agree.
  const Shape& s = w->data.shape();
  std::string key = std::string(dtype_name(w->data.dtype())) + shape_str(Shape(s.begin() + 1, s.end()));
  return key + attrs_key(n.attrs);
}

/// Concatenates the members' weights (axis 0) and biases (zeros where absent).
std::pair<Tensor, Tensor> concat_params(const std::vector<Node*>& convs) {
  const Tensor& w0 = convs[0]->input(1)->data;
  int64_t total_oc = 0;
  for (Node* c : convs) total_oc += c->input(1)->data.shape()[0];
  Shape ws = w0.shape();
  ws[0] = total_oc;
  Tensor w(w0.dtype(), ws), b(w0.dtype(), {total_oc});
  size_t woff = 0, boff = 0;
  const size_t esize = dtype_size(w0.dtype());
  for (Node* c : convs) {
    const Tensor& cw = c->input(1)->data;
    std::memcpy(static_cast<uint8_t*>(w.raw()) + woff, cw.raw(), cw.nbytes());
    woff += cw.nbytes();
    const int64_t oc = cw.shape()[0];
    if (c->input(2)) {
      const Tensor cb = c->input(2)->data.cast(w0.dtype());
      std::memcpy(static_cast<uint8_t*>(b.raw()) + boff, cb.raw(), cb.nbytes());
    }
    boff += static_cast<size_t>(oc) * esize;
  }
  return {w, b};
}

/// The unary elementwise node (same op and attributes) that is the only user of every one of
/// `outs`, or nullptr.
Node* shared_activation(const Graph& g, const std::vector<Value*>& outs) {
  Node* first = nullptr;
  for (Value* o : outs) {
    const auto users = g.users(o);
    if (users.size() != 1 || g.is_output(o)) return nullptr;
    Node* u = users[0];
    if (!u->def->has(kTraitElementwise) || u->inputs.size() != 1 || u->outputs.size() != 1 ||
        g.is_output(u->outputs[0]))
      return nullptr;
    if (!first) {
      first = u;
    } else if (u->op != first->op || attrs_key(u->attrs) != attrs_key(first->attrs)) {
      return nullptr;
    }
  }
  return first;
}

/// True when a branch's result (the conv output, or its activation's) feeds a Concat: the
/// combined output's split slice cannot then be written into the concat buffer as well (it has
/// one place), so combining would add a copy where the separate convs write in place.
bool feeds_concat(const Graph& g, const std::vector<Node*>& convs) {
  for (Node* c : convs) {
    std::vector<Value*> results = {c->outputs[0]};
    for (Node* u : g.users(c->outputs[0]))
      if (u->def->has(kTraitElementwise) && u->inputs.size() == 1) results.push_back(u->outputs[0]);
    for (Value* r : results)
      for (Node* u : g.users(r))
        if (u->op == "Concat") return true;
  }
  return false;
}

}  // namespace

bool CombineParallelConv::run(Graph& g, PassContext&) {
  bool changed = false;
  for (Value* v : g.values()) {
    std::map<std::string, std::vector<Node*>> by_key;
    for (Node* u : g.users(v)) {
      if (u->input(0) != v) continue;
      const std::string key = combine_key(*u);
      if (!key.empty()) by_key[key].push_back(u);
    }
    for (auto& [key, convs] : by_key) {
      if (convs.size() < 2 || feeds_concat(g, convs)) continue;
      auto [w, b] = concat_params(convs);
      std::vector<int64_t> sizes;
      std::vector<Value*> outs;
      std::string name = "combined";
      for (Node* c : convs) {
        sizes.push_back(c->input(1)->data.shape()[0]);
        outs.push_back(c->outputs[0]);
        name += "+" + c->name;
      }
      const std::string base = convs[0]->name;
      const Attrs attrs = convs[0]->attrs;
      Node* combined = g.add_node(
          "Conv", {v, g.add_constant(base + "_combined_w", w), g.add_constant(base + "_combined_b", b)},
          1, attrs, base + "_combined");
      TensorType t = outs[0]->type;
      int64_t total = 0;
      for (int64_t s : sizes) total += s;
      if (t.has_rank && t.rank() > 1) t.dims[1] = Dim(total);
      combined->outputs[0]->type = t;
      Value* to_split = combined->outputs[0];
      // When every branch applies the same activation, apply it once before the split, so it
      // stays in the combined convolution's epilogue.
      if (Node* act = shared_activation(g, outs)) {
        Node* once = g.add_node(act->op, {to_split}, 1, act->attrs, base + "_combined_" + act->op);
        once->outputs[0]->type = t;
        std::vector<Value*> act_outs;
        for (Value* o : outs) {
          Node* a = g.users(o)[0];
          act_outs.push_back(a->outputs[0]);
          g.detach_node(a);
        }
        outs = act_outs;
        to_split = once->outputs[0];
      }
      for (Node* c : convs) g.detach_node(c);
      Attrs split_attrs;
      split_attrs.set("axis", int64_t{1});
      g.add_node_with_outputs(
          "Split",
          {to_split, g.add_constant(base + "_combined_split",
                                    Tensor::from_vector<int64_t>({static_cast<int64_t>(sizes.size())}, sizes))},
          outs, split_attrs, base + "_combined_split");
      changed = true;
    }
  }
  if (changed) g.topo_sort();
  return changed;
}

}  // namespace yoloc
