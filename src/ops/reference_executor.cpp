#include "ops/reference_executor.h"

#include <fmt/format.h>

#include <unordered_map>

#include "ir/op_registry.h"

namespace yoloc {

void check_inputs(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, int64_t> symbols;
  for (const Value* in : g.inputs) {
    auto it = inputs.find(in->name);
    if (it == inputs.end())
      user_error("missing model input '{}' of type {}; pass it as --input {}=FILE.npy", in->name,
                 in->type.str(), in->name);
    const Tensor& t = it->second;
    if (t.dtype() != in->type.dtype)
      user_error("model input '{}' expects {} but got {} ({}); convert the data to {}", in->name,
                 dtype_name(in->type.dtype), dtype_name(t.dtype()), describe(t),
                 dtype_name(in->type.dtype));
    if (!in->type.has_rank) continue;
    bool ok = t.rank() == in->type.rank();
    for (size_t i = 0; ok && i < in->type.dims.size(); ++i) {
      const Dim& d = in->type.dims[i];
      const int64_t got = t.shape()[i];
      if (d.known()) {
        ok = d.value == got;
      } else if (!d.symbol.empty()) {
        auto [s, inserted] = symbols.emplace(d.symbol, got);
        ok = inserted || s->second == got;
      }
    }
    if (!ok)
      user_error("model input '{}' expects shape {} but got {}", in->name, in->type.str(),
                 describe(t));
  }
  for (const auto& [name, t] : inputs) {
    bool found = false;
    for (const Value* in : g.inputs) found |= in->name == name;
    if (!found) {
      std::vector<std::string> names;
      for (const Value* in : g.inputs) names.push_back(in->name);
      user_error("the model has no input named '{}' (its inputs: {})", name, fmt::join(names, ", "));
    }
  }
}

std::vector<NamedTensor> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  return run_reference(g, inputs, nullptr);
}

std::vector<NamedTensor> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs,
                                       const ValueObserver& observe) {
  check_inputs(g, inputs);
  const std::vector<Node*> nodes = g.nodes();
  // Last use of each value, so intermediates can be freed.
  std::unordered_map<const Value*, size_t> last_use;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Value* in : nodes[i]->inputs)
      if (in) last_use[in] = i;
  for (const Value* o : g.outputs) last_use[o] = nodes.size();

  std::unordered_map<const Value*, Tensor> env;
  for (const Value* in : g.inputs) env[in] = inputs.at(in->name);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    std::vector<Tensor> args;
    args.reserve(n->inputs.size());
    for (const Value* in : n->inputs) {
      if (!in) {
        args.emplace_back();
      } else if (in->is_constant()) {
        args.push_back(in->data);
      } else {
        auto it = env.find(in);
        YOLOC_CHECK(it != env.end(), "{}: input '{}' not computed", n->label(), in->name);
        args.push_back(it->second);
      }
    }
    std::vector<Tensor> outs = n->def->reference(*n, args);
    YOLOC_CHECK(outs.size() >= n->outputs.size(), "{}: reference gave {} outputs, expected {}",
                n->label(), outs.size(), n->outputs.size());
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      const Value* o = n->outputs[k];
      const Tensor& t = outs[k];
      YOLOC_CHECK(t.dtype() == o->type.dtype, "{}: output '{}' is {} but inferred {}", n->label(),
                  o->name, describe(t), o->type.str());
      if (o->type.has_rank) {
        bool ok = t.rank() == o->type.rank();
        for (size_t d = 0; ok && d < o->type.dims.size(); ++d)
          ok = !o->type.dims[d].known() || o->type.dims[d].value == t.shape()[d];
        YOLOC_CHECK(ok, "{}: output '{}' is {} but inferred {}", n->label(), o->name, describe(t),
                    o->type.str());
      }
      if (observe) observe(*o, t);
      env[o] = std::move(outs[k]);
    }
    for (const Value* in : n->inputs)
      if (in && !in->is_constant() && last_use[in] == i) env.erase(in);
  }
  std::vector<NamedTensor> result;
  for (const Value* o : g.outputs) {
    if (o->is_constant()) {
      result.push_back({o->name, o->data});
      continue;
    }
    auto it = env.find(o);
    YOLOC_CHECK(it != env.end(), "graph output '{}' not computed", o->name);
    result.push_back({o->name, it->second});
  }
  return result;
}

}  // namespace yoloc
