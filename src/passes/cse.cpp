#include "passes/cse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

/// Constants up to this size are compared byte by byte; larger ones are left alone.
constexpr size_t kMaxDedupBytes = size_t{1} << 20;


std::string constant_key(const Value& v) {
  std::string key = fmt::format("{}|{}|", dtype_name(v.data.dtype()), shape_str(v.data.shape()));
  key.append(static_cast<const char*>(v.data.raw()), v.data.nbytes());
  return key;
}

}  // namespace

bool CommonSubexpressionElimination::run(Graph& g, PassContext&) {
  bool changed = false;
  Redirects redirects;  // applied to each node in the walk below
  // Identical small constants become one value.
  std::unordered_map<std::string, Value*> constants;
  for (Value* v : g.values()) {
    if (!v->is_constant() || v->data.nbytes() > kMaxDedupBytes || g.is_output(v)) continue;
    auto [it, inserted] = constants.emplace(constant_key(*v), v);
    if (!inserted) redirects.add(g, v, it->second);
  }
  // Identical nodes (same op, same inputs, same attributes) computed once.
  std::unordered_map<std::string, Node*> seen;
  for (Node* n : g.nodes()) {
    changed |= redirects.apply(*n);
    std::string key = n->op + "(";
    for (const Value* in : n->inputs) key += in ? std::to_string(in->id) + "," : "_,";
    key += ")";
    for (const auto& [name, value] : n->attrs.all()) {
      // Tensor attributes print only their type; such nodes are not merged.
      if (std::holds_alternative<Tensor>(value)) key += "#" + std::to_string(n->id);
      key += name + "=" + attr_str(value) + ";";
    }
    key += std::to_string(n->outputs.size());
    auto [it, inserted] = seen.emplace(key, n);
    if (inserted) continue;
    bool outputs_free = true;
    for (const Value* o : n->outputs) outputs_free &= !g.is_output(o);
    if (!outputs_free) continue;
    for (size_t i = 0; i < n->outputs.size(); ++i)
      changed |= redirects.add(g, n->outputs[i], it->second->outputs[i]);
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace yoloc
