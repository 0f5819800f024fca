#include "quant/int8_rules.h"

#include <fnmatch.h>

#include <set>

namespace yoloc::quant {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns)
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

std::vector<ConvChoice> choose_int8_convs(const Graph& g, const std::vector<std::string>& skip) {
  const std::vector<Node*> nodes = g.nodes();
  // Values computed after a Softmax (the DFL's decode).
  std::set<const Value*> decoded;
  for (const Node* n : nodes) {
    bool after = n->op == "Softmax";
    for (const Value* in : n->inputs) after = after || (in && decoded.contains(in));
    if (after)
      for (const Value* o : n->outputs) decoded.insert(o);
  }
  // Values from which a feature conv (a conv not after a Softmax) is reachable.
  std::set<const Value*> feeds_conv;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* n = *it;
    bool feeds = n->op == "Conv" && !decoded.contains(n->outputs[0]);
    for (const Value* o : n->outputs) feeds = feeds || feeds_conv.contains(o);
    if (feeds)
      for (const Value* in : n->inputs)
        if (in && !in->is_constant()) feeds_conv.insert(in);
  }
  std::set<const Value*> graph_inputs(g.inputs.begin(), g.inputs.end());
  std::vector<ConvChoice> out;
  for (const Node* n : nodes) {
    if (n->op != "Conv") continue;
    ConvChoice c{n->outputs[0]->name, n->inputs[0]->name, ""};
    const Value* w = n->input(1);
    // The stem reads the image, itself or through one node that is no conv (the cast of a
    // float16 input, a space-to-depth).
    bool stem = graph_inputs.contains(n->inputs[0]);
    if (const Node* p = n->inputs[0]->producer; p && !stem && p->op != "Conv")
      for (const Value* in : p->inputs) stem = stem || graph_inputs.contains(in);
    if (!w || !w->is_constant() || w->data.dtype() != DType::kFloat32)
      c.float_reason = "weights not a float32 constant";
    else if (stem)
      c.float_reason = "stem (reads the image)";
    else if (decoded.contains(n->outputs[0]))
      c.float_reason = "decode (after the DFL softmax)";
    else if (!feeds_conv.contains(n->outputs[0]))
      c.float_reason = "detect head output";
    else if (n->attrs.get_int("group", 1) > 1 && w->data.shape().size() > 1 &&
             w->data.shape()[1] == 1)
      c.float_reason = "depthwise (one per-tensor int8 scale over channels of unequal range)";
    else if (matches_any(c.conv, skip) || matches_any(n->name, skip))
      c.float_reason = "--int8-skip";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace yoloc::quant
