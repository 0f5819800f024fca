#pragma once
/// Helpers for the op unit tests: run one op through type inference and the reference executor.
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ops/reference_executor.h"

namespace yoloc::test {

/// Runs one op whose inputs are graph inputs (so inference sees types, not values) and returns
/// its outputs; the executor checks them against the inferred types.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& ins,
                                  Attrs attrs = {}, size_t outputs = 1) {
  Graph g;
  std::vector<Value*> vs;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    Value* v = g.add_value("in" + std::to_string(i), TensorType::of(ins[i]));
    g.inputs.push_back(v);
    feeds[v->name] = ins[i];
    vs.push_back(v);
  }
  Node* n = g.add_node(op, vs, outputs, std::move(attrs));
  for (Value* o : n->outputs) g.outputs.push_back(o);
  infer_shapes(g);
  std::vector<Tensor> r;
  for (auto& nt : run_reference(g, feeds)) r.push_back(nt.tensor);
  return r;
}

/// The output types of one op whose inputs have the given types; `constants` (by input index)
/// are constant inputs instead.
inline std::vector<TensorType> infer_op(const std::string& op, const std::vector<TensorType>& ins,
                                        const std::map<size_t, Tensor>& constants = {},
                                        Attrs attrs = {}, size_t outputs = 1) {
  Graph g;
  std::vector<Value*> vs;
  for (size_t i = 0; i < ins.size(); ++i) {
    auto c = constants.find(i);
    vs.push_back(c != constants.end() ? g.add_constant("c" + std::to_string(i), c->second)
                                      : g.add_value("in" + std::to_string(i), ins[i]));
  }
  Node* n = g.add_node(op, vs, outputs, std::move(attrs));
  infer_shapes(g);
  std::vector<TensorType> r;
  for (Value* o : n->outputs) r.push_back(o->type);
  return r;
}

inline Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

inline Tensor iota_f32(Shape s) {
  Tensor t(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

inline std::vector<double> vals(const Tensor& t) { return t.to_doubles(); }

}  // namespace yoloc::test
