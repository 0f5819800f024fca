#pragma once
/// Test helper for the op unit tests: runs one IR op through type inference and the reference
/// executor, so every test also checks that inference agrees with the reference's output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "ops/reference_executor.h"

namespace yoloc::testing {

/// An op input: a runtime tensor (graph input), a compile-time constant, or omitted.
struct OpInput {
  Tensor tensor;
  bool constant = false;

  OpInput() = default;
  OpInput(Tensor t) : tensor(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  static OpInput constant_of(Tensor t) {
    OpInput i(std::move(t));
    i.constant = true;
    return i;
  }
};

/// Runs `op` on `inputs` (undefined tensors are omitted inputs); returns its outputs.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<OpInput>& inputs,
                                  const Attrs& attrs = {}, size_t num_outputs = 1) {
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
  Node* n = g.add_node(op, ins, num_outputs, attrs, "test");
  infer_shapes(g);
  g.outputs = n->outputs;
  std::vector<Tensor> out;
  for (auto& nt : run_reference(g, feeds)) out.push_back(nt.tensor);
  return out;
}

/// Inferred output types of `op` for inputs of the given types (an undefined type omits the
/// input); `constants` gives the values of inputs known at compile time (undefined where not).
inline std::vector<TensorType> infer_op(const std::string& op, const std::vector<TensorType>& types,
                                        const std::vector<Tensor>& constants, const Attrs& attrs,
                                        size_t num_outputs = 1) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].dtype == DType::kUndefined) {
      ins.push_back(nullptr);
    } else if (i < constants.size() && constants[i].defined()) {
      ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
    } else {
      ins.push_back(g.add_value("in" + std::to_string(i), types[i]));
      g.inputs.push_back(ins.back());
    }
  }
  Node* n = g.add_node(op, ins, num_outputs, attrs, "test");
  infer_shapes(g);
  std::vector<TensorType> out;
  for (Value* v : n->outputs) out.push_back(v->type);
  return out;
}

/// Element-wise comparison of a tensor (any numeric dtype) with expected values and shape.
inline void expect_values(const Tensor& t, const Shape& shape, const std::vector<double>& want,
                          double tol = 1e-5) {
  ASSERT_EQ(t.shape(), shape) << describe(t);
  const std::vector<double> got = t.to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

template <typename T>
Tensor tensor(Shape shape, std::vector<T> v) {
  return Tensor::from_vector<T>(std::move(shape), v);
}

inline Attrs attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attrs a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

}  // namespace yoloc::testing
