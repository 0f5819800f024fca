#pragma once
// Helpers for op unit tests: run one IR node through inference and its reference kernel, and
// import a one-node ONNX model to test a converter.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "frontend/onnx/importer.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/shape_inference.h"

namespace yoloc::test {

/// Runs `op` on `ins` (an undefined Tensor marks an omitted input): the inputs listed in
/// `constants` are constant values, the others are graph inputs, so inference sees only their
/// types. Checks that the inferred output types match what the reference kernel produced.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& ins,
                                  Attrs attrs = {}, std::set<size_t> constants = {},
                                  size_t num_outputs = 1) {
  Graph g;
  std::vector<Value*> vals;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].defined())
      vals.push_back(nullptr);
    else if (constants.count(i))
      vals.push_back(g.add_constant("c" + std::to_string(i), ins[i]));
    else
      vals.push_back(g.add_value("x" + std::to_string(i), TensorType::of(ins[i])));
  }
  Node* n = g.add_node(op, vals, num_outputs, std::move(attrs), "node");
  infer_node(*n);
  std::vector<Tensor> outs = n->def->reference(*n, ins);
  for (size_t i = 0; i < num_outputs; ++i)
    EXPECT_EQ(n->outputs[i]->type, TensorType::of(outs[i])) << op << " output " << i;
  return outs;
}

/// Inference only: the output types of `op` on inputs of the given types.
inline std::vector<TensorType> infer_op(const std::string& op, const std::vector<TensorType>& ins,
                                        Attrs attrs = {}, size_t num_outputs = 1) {
  Graph g;
  std::vector<Value*> vals;
  for (size_t i = 0; i < ins.size(); ++i) vals.push_back(g.add_value("x", ins[i]));
  Node* n = g.add_node(op, vals, num_outputs, std::move(attrs), "node");
  infer_node(*n);
  std::vector<TensorType> r;
  for (const Value* o : n->outputs) r.push_back(o->type);
  return r;
}

/// Flat values of a tensor as doubles, for EXPECT comparisons.
inline std::vector<double> values(const Tensor& t) { return t.to_doubles(); }

/// Expects `t` to hold `expected` within `tol`, element by element (NaN matches NaN, infinities
/// match exactly).
inline void expect_near(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
  const std::vector<double> v = t.to_doubles();
  ASSERT_EQ(v.size(), expected.size()) << describe(t);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(v[i])) << "element " << i;
    else if (std::isinf(expected[i]))
      EXPECT_EQ(v[i], expected[i]) << "element " << i;
    else
      EXPECT_NEAR(v[i], expected[i], tol) << "element " << i;
  }
}

/// A one-node ONNX model at `opset`: graph inputs `inputs` (name, ONNX element type, shape; a
/// negative dim is a symbolic "n"), initializers `inits`, one output "y".
struct OnnxInput {
  std::string name;
  int elem_type;
  std::vector<int64_t> shape;
};
inline onnx::ModelProto one_node_model(const std::string& op, int64_t opset,
                                       const std::vector<OnnxInput>& inputs,
                                       const std::vector<std::string>& node_inputs,
                                       const std::vector<onnx::TensorProto>& inits = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  for (const OnnxInput& in : inputs) {
    onnx::ValueInfoProto* v = g->add_input();
    v->set_name(in.name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(in.elem_type);
    for (int64_t d : in.shape) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param("n");
      else
        dim->set_dim_value(d);
    }
  }
  for (const onnx::TensorProto& t : inits) *g->add_initializer() = t;
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("n");
  for (const std::string& s : node_inputs) n->add_input(s);
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

inline void add_attr(onnx::ModelProto& m, const std::string& name, int64_t v) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void add_attr(onnx::ModelProto& m, const std::string& name, float v) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void add_attr(onnx::ModelProto& m, const std::string& name, std::vector<int64_t> v) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

/// Imports the model; the graph's nodes in order.
inline std::unique_ptr<Graph> import_model(const onnx::ModelProto& m) {
  return onnx_frontend::import_onnx_bytes(m.SerializeAsString(), "test model");
}

}  // namespace yoloc::test
