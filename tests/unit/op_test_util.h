#pragma once
/// Helpers for the op unit tests: run one IR op through type inference and its reference
/// implementation, make small tensors and attributes, compare values, and import one-node ONNX
/// models to test converters.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frontend/onnx/importer.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "ops/reference_executor.h"

namespace yoloc::testing {

/// An op input: a runtime tensor (a graph input, so inference sees only its type), a
/// compile-time constant, or omitted (an undefined tensor).
struct OpInput {
  Tensor tensor;
  bool constant = false;

  OpInput() = default;
  OpInput(Tensor t) : tensor(std::move(t)) {}  // NOLINT(google-explicit-constructor)
};

/// A compile-time constant op input.
inline OpInput constant(Tensor t) {
  OpInput i(std::move(t));
  i.constant = true;
  return i;
}

/// Runs `op` on `inputs` and returns its outputs. The reference executor checks every output
/// against the inferred type: same dtype and rank, and the dims inference knows (runtime values
/// such as a Reshape target or Resize scales leave dims unknown). `inferred`, when given,
/// receives the inferred output types.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<OpInput>& inputs,
                                  Attrs attrs = {}, size_t num_outputs = 1,
                                  std::vector<TensorType>* inferred = nullptr) {
  Graph g;
  std::vector<Value*> ins;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OpInput& in = inputs[i];
    const std::string name = "in" + std::to_string(i);
    if (!in.tensor.defined()) {
      ins.push_back(nullptr);
    } else if (in.constant) {
      ins.push_back(g.add_constant(name, in.tensor));
    } else {
      Value* v = g.add_value(name, TensorType::of(in.tensor));
      g.inputs.push_back(v);
      feeds[name] = in.tensor;
      ins.push_back(v);
    }
  }
  Node* n = g.add_node(op, ins, num_outputs, std::move(attrs), "node");
  infer_shapes(g);
  g.outputs = n->outputs;
  if (inferred)
    for (const Value* o : n->outputs) inferred->push_back(o->type);
  std::vector<Tensor> outs;
  for (NamedTensor& nt : run_reference(g, feeds)) outs.push_back(std::move(nt.tensor));
  return outs;
}

/// run_op for an op whose output types follow from its input types and constants alone: also
/// expects inference to give each output's exact type.
inline std::vector<Tensor> run_op_exact(const std::string& op, const std::vector<OpInput>& inputs,
                                        Attrs attrs = {}, size_t num_outputs = 1) {
  std::vector<TensorType> inferred;
  std::vector<Tensor> outs = run_op(op, inputs, std::move(attrs), num_outputs, &inferred);
  for (size_t i = 0; i < outs.size(); ++i)
    EXPECT_EQ(inferred[i], TensorType::of(outs[i])) << op << " output " << i;
  return outs;
}

/// The inferred output types of `op` on inputs of the given types. Where `constants[i]` is
/// defined, input i is that constant; otherwise an undefined type omits the input.
inline std::vector<TensorType> infer_op(const std::string& op, const std::vector<TensorType>& types,
                                        const std::vector<Tensor>& constants = {}, Attrs attrs = {},
                                        size_t num_outputs = 1) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i < constants.size() && constants[i].defined())
      ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
    else if (types[i].dtype == DType::kUndefined)
      ins.push_back(nullptr);
    else
      ins.push_back(g.add_value("in" + std::to_string(i), types[i]));
  }
  Node* n = g.add_node(op, ins, num_outputs, std::move(attrs), "node");
  infer_shapes(g);
  std::vector<TensorType> out;
  for (const Value* v : n->outputs) out.push_back(v->type);
  return out;
}

template <typename T>
Tensor tensor(Shape shape, const std::vector<T>& v) {
  return Tensor::from_vector<T>(std::move(shape), v);
}

/// A 1-D int64 tensor (axes, shapes, pads, ...).
inline Tensor i64(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

/// A float32 tensor holding 0, 1, 2, ... in row-major order.
inline Tensor iota_f32(Shape s) {
  Tensor t(DType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

inline Attrs attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attrs a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
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

/// expect_near that first checks the shape.
inline void expect_values(const Tensor& t, const Shape& shape, const std::vector<double>& expected,
                          double tol = 1e-5) {
  ASSERT_EQ(t.shape(), shape) << describe(t);
  expect_near(t, expected, tol);
}

/// A graph input of a one-node ONNX model: name, ONNX element type, shape (a negative dim is a
/// symbolic "n").
struct OnnxInput {
  std::string name;
  int elem_type;
  std::vector<int64_t> shape;
};

/// A one-node ONNX model at `opset`: graph inputs `inputs`, initializers `inits`, one output "y".
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

/// Adds an attribute of `type` to the model's one node; the add_attr overloads set its value.
inline onnx::AttributeProto* new_attr(onnx::ModelProto& m, const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void add_attr(onnx::ModelProto& m, const std::string& name, int64_t v) {
  new_attr(m, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void add_attr(onnx::ModelProto& m, const std::string& name, float v) {
  new_attr(m, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void add_attr(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = new_attr(m, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

/// Imports the model as the ONNX frontend would a file.
inline std::unique_ptr<Graph> import_model(const onnx::ModelProto& m) {
  return onnx_frontend::import_onnx_bytes(m.SerializeAsString(), "test model");
}

}  // namespace yoloc::testing
