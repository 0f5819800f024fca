#include "ir/dot.h"

#include <gtest/gtest.h>

using namespace yoloc;

TEST(Dot, BoxesEdgesAndFoldedConstants) {
  Graph g;
  g.name = "my \"graph\"";
  Value* x = g.add_value("x", TensorType(DType::kFloat32, {Dim::sym("batch"), 4}));
  g.inputs.push_back(x);
  Value* w = g.add_constant("model/w", Tensor(DType::kFloat32, {4}));
  Node* mul = g.add_node("Mul", {x, w}, 1, {}, "scale");
  mul->outputs[0]->type = TensorType(DType::kFloat32, {Dim::sym("batch"), 4});
  Node* add = g.add_node("Add", {mul->outputs[0], x}, 1, {}, "residual");
  add->outputs[0]->type = mul->outputs[0]->type;
  g.outputs.push_back(add->outputs[0]);

  const std::string d = to_dot(g);
  EXPECT_EQ(d.rfind("digraph \"my \\\"graph\\\"\" {", 0), 0u) << d;
  // The constant is folded into Mul's label (by its short name), not drawn as a node.
  EXPECT_NE(d.find("label=\"Mul\\nw: float32[4]\\nfloat32[batch, 4]\""), std::string::npos) << d;
  EXPECT_NE(d.find("tooltip=\"residual\""), std::string::npos);
  const std::string m = "n" + std::to_string(mul->id), a = "n" + std::to_string(add->id);
  for (const std::string& e : {"in0 -> " + m, m + " -> " + a, "in0 -> " + a, a + " -> out0"})
    EXPECT_NE(d.find(e + ";"), std::string::npos) << e << "\n" << d;
  size_t edges = 0;
  for (size_t p = d.find("->"); p != std::string::npos; p = d.find("->", p + 1)) ++edges;
  EXPECT_EQ(edges, 4u);
}
