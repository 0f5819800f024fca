#include "passes/quantize_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/error.h"
#include "ir/shape_inference.h"

namespace yoloc {

namespace {

Value* add_typed_node(Graph& g, const std::string& op, std::vector<Value*> inputs, Attrs attrs,
                      const std::string& name) {
  Node* n = g.add_node(op, std::move(inputs), 1, std::move(attrs), name);
  infer_node(*n);
  return n->outputs[0];
}

/// The bias of `conv` (O values, zero when it has none) minus the weights' expected error on an
/// input of channel means `means`: sum over the window of (w_dq - w) * mean(x_c).
Tensor corrected_bias(const Node& conv, const Tensor& w, const Tensor& w_dq,
                      const std::vector<double>& means) {
  const int64_t O = w.shape()[0], Cg = w.shape()[1];
  const int64_t window = w.numel() / (O * Cg);
  const int64_t groups = conv.attrs.get_int("group", 1);
  const int64_t per_group = O / groups;
  std::vector<double> bias(static_cast<size_t>(O), 0.0);
  if (const Value* b = conv.input(2)) bias = b->data.to_doubles();
  const float* pw = w.data<float>();
  const float* pd = w_dq.data<float>();
  std::vector<float> out(static_cast<size_t>(O));
  for (int64_t o = 0; o < O; ++o) {
    const int64_t c0 = o / per_group * Cg;
    double err = 0;
    for (int64_t c = 0; c < Cg; ++c) {
      double e = 0;
      for (int64_t k = 0; k < window; ++k) {
        const int64_t i = (o * Cg + c) * window + k;
        e += static_cast<double>(pd[i]) - static_cast<double>(pw[i]);
      }
      err += e * means[static_cast<size_t>(c0 + c)];
    }
    out[static_cast<size_t>(o)] = static_cast<float>(bias[static_cast<size_t>(o)] - err);
  }
  return Tensor::from_vector<float>({O}, out);
}

}  // namespace

ChannelQuantized quantize_per_channel(const Tensor& w) {
  const int64_t O = w.shape().at(0);
  const int64_t per = w.numel() / O;
  const float* pw = w.data<float>();
  ChannelQuantized r{Tensor(DType::kInt8, w.shape()), Tensor(DType::kFloat32, {O})};
  int8_t* q = r.q.data<int8_t>();
  float* s = r.scales.data<float>();
  for (int64_t o = 0; o < O; ++o) {
    float m = 0;
    for (int64_t k = 0; k < per; ++k) m = std::max(m, std::fabs(pw[o * per + k]));
    s[o] = m > 0 ? m / 127.0f : 1.0f;
    for (int64_t k = 0; k < per; ++k) {
      const float v = std::nearbyint(pw[o * per + k] / s[o]);
      q[o * per + k] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
  return r;
}

bool QuantizeGraph::run(Graph& g, PassContext& ctx) {
  if (!ctx.int8 || ctx.int8->convs.empty()) return false;
  std::map<std::string, Node*> convs;
  for (Node* n : g.nodes())
    if (n->op == "Conv" && ctx.int8->convs.contains(n->outputs[0]->name))
      convs.emplace(n->outputs[0]->name, n);
  for (const auto& [name, q] : ctx.int8->convs)
    if (!convs.contains(name))
      user_error("int8: the model has no convolution writing '{}' (the calibration is of "
                 "another import of it: calibrate again with the same --imgsz and --batch)",
                 name);
  // One quantize / dequantize pair per activation and scale, shared by its readers.
  std::map<std::tuple<const Value*, float, int>, Value*> pairs;
  for (const auto& [name, conv] : convs) {
    const Int8Conv& q = ctx.int8->convs.at(name);
    Value* x = conv->inputs[0];
    Value* w = conv->inputs[1];
    if (!w->is_constant() || w->data.dtype() != DType::kFloat32)
      user_error("int8: conv '{}' has weights that are not a float32 constant; the quantizer "
                 "takes float models (pass --int8-skip '{}' to keep it in float)",
                 conv->label(), name);
    auto& dq = pairs[{x, q.input_scale, q.input_zero_point}];
    if (!dq) {
      const std::string base = g.find_value(x->name + "_int8") ? x->name + "_int8_" + name
                                                                : x->name + "_int8";
      Value* s = g.add_constant(base + "_scale", Tensor::scalar<float>(q.input_scale));
      Value* zp = g.add_constant(base + "_zero_point",
                                 Tensor::scalar<int8_t>(static_cast<int8_t>(q.input_zero_point)));
      Value* xq = add_typed_node(g, "QuantizeLinear", {x, s, zp}, {}, base + "_quantize");
      dq = add_typed_node(g, "DequantizeLinear", {xq, s, zp}, {}, base + "_dequantize");
    }
    conv->inputs[0] = dq;
    const ChannelQuantized wq = quantize_per_channel(w->data);
    const int64_t O = w->data.shape()[0];
    Attrs axis0;
    axis0.set("axis", int64_t{0});
    Value* wq_value = add_typed_node(
        g, "DequantizeLinear",
        {g.add_constant(name + "_weight_int8", wq.q),
         g.add_constant(name + "_weight_scale", wq.scales),
         g.add_constant(name + "_weight_zero_point", Tensor(DType::kInt8, {O}))},
        axis0, name + "_weight_dequantize");
    const int64_t C = conv->attrs.get_int("group", 1) * w->data.shape()[1];
    if (ctx.int8->bias_correction && static_cast<int64_t>(q.channel_means.size()) == C) {
      // The float form of the int8 weights, as DequantizeLinear computes it.
      Tensor w_dq(DType::kFloat32, w->data.shape());
      const int64_t per = w->data.numel() / O;
      for (int64_t o = 0; o < O; ++o)
        for (int64_t k = 0; k < per; ++k)
          w_dq.data<float>()[o * per + k] =
              static_cast<float>(wq.q.data<int8_t>()[o * per + k]) * wq.scales.data<float>()[o];
      Value* b = g.add_constant(name + "_bias_corrected",
                                corrected_bias(*conv, w->data, w_dq, q.channel_means));
      if (conv->inputs.size() < 3) conv->inputs.resize(3, nullptr);
      conv->inputs[2] = b;
    }
    conv->inputs[1] = wq_value;
  }
  g.topo_sort();
  g.remove_dead();
  return true;
}

}  // namespace yoloc
