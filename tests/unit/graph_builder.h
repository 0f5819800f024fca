#pragma once
/// Helpers to build small IR graphs in tests (the pass tests) and to check a rewritten graph
/// against the original by running both on the reference executor. Single-op runs are in
/// op_test_util.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ops/reference_executor.h"

namespace yoloc::testing {

/// A float32 tensor of uniform values in [lo, hi) from a generator seeded with `seed`.
inline Tensor random_tensor(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::kFloat32, std::move(shape));
  float* d = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = u(rng);
  return t;
}

/// A new float32 graph input of the given static shape.
inline Value* input(Graph& g, const std::string& name, Shape shape) {
  std::vector<Dim> dims(shape.begin(), shape.end());
  Value* v = g.add_value(name, TensorType(DType::kFloat32, dims));
  g.inputs.push_back(v);
  return v;
}

/// A new one-output node, type-inferred at once; returns its output.
inline Value* node(Graph& g, const std::string& op, std::vector<Value*> ins, Attrs attrs = {}) {
  Node* n = g.add_node(op, std::move(ins), 1, std::move(attrs));
  infer_node(*n);
  return n->outputs[0];
}

/// Attributes of a square k x k, stride-1 Conv padded by `pad` on every side.
inline Attrs conv_attrs(int64_t k, int64_t pad, int64_t group = 1) {
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.set("strides", std::vector<int64_t>{1, 1});
  a.set("group", group);
  return a;
}

/// A "same" Conv with random weights and bias (seeded with `seed`, `seed` + 1).
inline Value* conv(Graph& g, Value* x, int64_t in_c, int64_t out_c, int64_t k, uint32_t seed) {
  Value* w = g.add_constant("w", random_tensor({out_c, in_c, k, k}, seed));
  Value* b = g.add_constant("b", random_tensor({out_c}, seed + 1));
  return node(g, "Conv", {x, w, b}, conv_attrs(k, k / 2));
}

/// The number of nodes of `op` in g.
inline size_t count_op(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* x : g.nodes()) n += x->op == op;
  return n;
}

/// Max |a-b| / max(max|a|, 1e-6) over all outputs of two graphs on the same inputs.
inline double max_rel_diff(const Graph& a, const Graph& b,
                           const std::map<std::string, Tensor>& in) {
  auto ra = run_reference(a, in);
  auto rb = run_reference(b, in);
  EXPECT_EQ(ra.size(), rb.size());
  double worst = 0;
  for (size_t i = 0; i < ra.size() && i < rb.size(); ++i) {
    const auto x = ra[i].tensor.to_doubles(), y = rb[i].tensor.to_doubles();
    EXPECT_EQ(x.size(), y.size());
    double scale = 1e-6, diff = 0;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      scale = std::max(scale, std::abs(x[k]));
      diff = std::max(diff, std::abs(x[k] - y[k]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace yoloc::testing
