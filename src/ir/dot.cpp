#include "ir/dot.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

namespace yoloc {

namespace {

/// Constants listed in a node's label before "+N more" (Concat of many constants, etc.).
constexpr size_t kMaxConstantsShown = 3;

/// A DOT string literal's contents: quotes and backslashes escaped; "\n" line breaks kept apart
/// by the callers, who join lines with the DOT escape \n.
std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') {
      r += "\\n";
      continue;
    }
    r += c;
  }
  return r;
}

std::string short_name(const std::string& name) {
  const auto slash = name.find_last_of('/');
  return slash == std::string::npos || slash + 1 == name.size() ? name : name.substr(slash + 1);
}

std::string node_label(const Node& n) {
  std::vector<std::string> lines{n.op};
  std::vector<std::string> consts;
  for (const Value* in : n.inputs)
    if (in && in->is_constant())
      consts.push_back(fmt::format("{}: {}", short_name(in->name), in->type.str()));
  for (size_t i = 0; i < consts.size() && i < kMaxConstantsShown; ++i) lines.push_back(consts[i]);
  if (consts.size() > kMaxConstantsShown)
    lines.push_back(fmt::format("+{} more constants", consts.size() - kMaxConstantsShown));
  for (const Value* out : n.outputs) lines.push_back(out->type.str());
  std::string label;
  for (size_t i = 0; i < lines.size(); ++i) label += (i ? "\n" : "") + lines[i];
  return escape(label);
}

}  // namespace

std::string to_dot(const Graph& g) {
  std::string s = fmt::format("digraph \"{}\" {{\n", escape(g.name.empty() ? "graph" : g.name));
  s += "  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n";
  s += "  edge [color=\"#555555\"];\n";
  // Where each non-constant value comes from: a node id or a graph input id.
  std::map<const Value*, std::string> source;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value* v = g.inputs[i];
    const std::string id = fmt::format("in{}", i);
    source[v] = id;
    s += fmt::format("  {} [shape=ellipse, style=filled, fillcolor=\"#dde8f7\", label=\"{}\"];\n",
                     id, escape(v->name + "\n" + v->type.str()));
  }
  // Nodes, each fused kernel of two or more nodes drawn as a cluster.
  std::map<int, std::vector<const Node*>> by_group;
  for (const Node* n : g.nodes()) by_group[n->group].push_back(n);
  for (const auto& [group, nodes] : by_group) {
    const bool cluster = group >= 0 && nodes.size() > 1 &&
                         g.groups[static_cast<size_t>(group)].is_kernel();
    if (cluster)
      s += fmt::format(
          "  subgraph cluster_{} {{\n    label=\"{}\"; style=\"rounded,filled\"; "
          "fillcolor=\"#fff6e0\"; color=\"#d9a441\"; fontsize=9;\n",
          group, escape(g.groups[static_cast<size_t>(group)].name));
    for (const Node* n : nodes)
      s += fmt::format("  {}n{} [label=\"{}\", tooltip=\"{}\"];\n", cluster ? "  " : "", n->id,
                       node_label(*n), escape(n->name.empty() ? n->op : n->name));
    if (cluster) s += "  }\n";
  }
  for (const Node* n : g.nodes()) {
    const std::string id = fmt::format("n{}", n->id);
    std::set<std::string> from;
    for (const Value* in : n->inputs) {
      auto it = in ? source.find(in) : source.end();
      if (it != source.end() && from.insert(it->second).second)
        s += fmt::format("  {} -> {};\n", it->second, id);
    }
    for (const Value* out : n->outputs) source[out] = id;
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Value* v = g.outputs[i];
    const std::string id = fmt::format("out{}", i);
    s += fmt::format("  {} [shape=ellipse, style=filled, fillcolor=\"#e3f2dd\", label=\"{}\"];\n",
                     id, escape(v->name + "\n" + v->type.str()));
    auto it = source.find(v);
    if (it != source.end()) s += fmt::format("  {} -> {};\n", it->second, id);
  }
  s += "}\n";
  return s;
}

}  // namespace yoloc
