#pragma once
// Helpers of the CPU codegen tests: a fused group as a graph of its own (for the reference
// executor), tensors in a value's layout and back, the shared models optimized for "cpu".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/emit_util.h"
#include "frontend/onnx/importer.h"
#include "ir/shape_inference.h"
#include "passes/pipeline.h"
#include "targets/cpu/cpu_attributes.h"

namespace yoloc::codegen::cpu {

// The group's nodes as a graph of their own: its activations become inputs, its outputs the
// graph's outputs (in GroupIO order).
inline std::unique_ptr<Graph> subgraph(const GroupIO& io) {
  auto s = std::make_unique<Graph>();
  std::map<const Value*, Value*> m;
  for (const Value* v : io.inputs) {
    if (v->is_constant()) {
      m[v] = s->add_constant(v->name, v->data);
    } else {
      m[v] = s->add_value(v->name, v->type);
      s->inputs.push_back(m[v]);
    }
  }
  for (const Node* n : io.nodes) {
    std::vector<Value*> ins;
    for (const Value* v : n->inputs) ins.push_back(v ? m.at(v) : nullptr);
    Node* c = s->add_node(n->op, ins, n->outputs.size(), n->attrs, n->name);
    for (size_t i = 0; i < n->outputs.size(); ++i) m[n->outputs[i]] = c->outputs[i];
  }
  for (const Value* v : io.outputs) s->outputs.push_back(m.at(v));
  infer_shapes(*s);
  return s;
}

inline bool blocked(const Value* v) { return v->layout.layout == Layout::kNCHWc; }

// A logical NCHW tensor in the value's layout, and back.
inline std::vector<float> to_layout(const Value* v, const Tensor& t) {
  const float* d = t.data<float>();
  if (!blocked(v)) return std::vector<float>(d, d + t.numel());
  const Shape s = t.shape();
  return to_nchw16c(d, s[0], s[1], s[2], s[3]);
}
inline std::vector<float> from_layout(const Value* v, const std::vector<float>& x) {
  if (!blocked(v)) return x;
  const Shape s = v->type.static_shape();
  return from_nchw16c(x.data(), s[0], s[1], s[2], s[3]);
}

inline void expect_close(const std::vector<float>& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float ref = want.data<float>()[i];
    if (!(std::fabs(got[i] - ref) <= 1e-4f * std::max(1.f, std::fabs(ref))) && bad++ < 5) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << ref;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

inline std::unique_ptr<Graph> optimized(std::unique_ptr<Graph> g) {
  PassContext ctx;
  ctx.target = yoloc::targets::cpu_attributes();
  optimize(*g, ctx);
  return g;
}

inline std::unique_ptr<Graph> shared_model(const std::string& file) {
  const char* env = std::getenv("YOLOC_SHARED_DIR");
  const auto path = std::filesystem::path(env ? env : YOLOC_SHARED_DIR) / "models" / file;
  if (!std::filesystem::exists(path)) return nullptr;
  return optimized(onnx_frontend::import_onnx(path.string()));
}

}  // namespace yoloc::codegen::cpu
