#include "ir/printer.h"

#include <fmt/format.h>

namespace yoloc {

std::string print_graph(const Graph& g) {
  std::string s = fmt::format("graph '{}' (opset {})\n", g.name, g.opset);
  for (const Value* v : g.inputs) s += fmt::format("  input %{} : {}\n", v->name, v->type.str());
  for (const Node* n : g.nodes()) {
    std::vector<std::string> outs, ins, attrs;
    for (const Value* o : n->outputs) outs.push_back("%" + o->name);
    for (const Value* i : n->inputs) ins.push_back(i ? "%" + i->name : "_");
    for (const auto& [k, v] : n->attrs.all()) attrs.push_back(k + "=" + attr_str(v));
    std::vector<std::string> types;
    for (const Value* o : n->outputs) types.push_back(o->type.str());
    const std::string group = n->group >= 0 ? fmt::format("[k{}] ", n->group) : "";
    s += fmt::format("  {}{} = {}({}){} : {}\n", group, fmt::join(outs, ", "), n->op, fmt::join(ins, ", "),
                     attrs.empty() ? "" : fmt::format(" {{{}}}", fmt::join(attrs, ", ")),
                     fmt::join(types, ", "));
  }
  for (const Value* v : g.outputs) s += fmt::format("  output %{} : {}\n", v->name, v->type.str());
  return s;
}

}  // namespace yoloc
