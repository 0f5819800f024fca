#include "passes/quantization.h"

#include "ir/op_registry.h"
#include "ir/pattern.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

/// (w_q - w_zp) * w_scale as float32, per tensor or per output channel zero point.
Tensor dequantize_weights(const Tensor& wq, const Tensor& wzp, double scale) {
  const int64_t oc = wq.shape()[0];
  const int64_t per_oc = wq.numel() / oc;
  const std::vector<double> q = wq.to_doubles();
  const std::vector<double> zp = wzp.defined() ? wzp.to_doubles() : std::vector<double>{0.0};
  Tensor w(DType::kFloat32, wq.shape());
  float* pw = w.data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    const double z = zp.size() == 1 ? zp[0] : zp[static_cast<size_t>(o)];
    for (int64_t k = 0; k < per_oc; ++k) {
      const size_t i = static_cast<size_t>(o * per_oc + k);
      pw[i] = static_cast<float>((q[i] - z) * scale);
    }
  }
  return w;
}

}  // namespace

bool Quantization::run(Graph& g, PassContext& ctx) {
  // int8 (and auto: keep the model's own numerics) keep the integer convolutions; the kernels
  // fuse the Cast/Mul/Add epilogue. Float precisions trade the activation quantization for
  // float convolutions on the dequantized weights.
  if (ctx.precision == Precision::kInt8 || ctx.precision == Precision::kAuto) return false;
  const Pattern conv_int = Pattern::op(
      "Mul",
      {Pattern::op("Cast", {Pattern::op("ConvInteger", {Pattern::op("DynamicQuantizeLinear", {Pattern::any("x")}, "dql"),
                                                        Pattern::constant("wq"), Pattern::any("xzp"),
                                                        Pattern::constant("wzp")},
                                        "conv")}),
       Pattern::op("Mul", {Pattern::any("xs"), Pattern::constant("ws")}).commutative()})
                               .commutative();
  bool changed = false;
  Matcher m(g);
  for (Node* n : g.nodes()) {
    Match match;
    if (!m.match(conv_int, n->outputs[0], &match)) continue;
    Node* dql = match.node("dql");
    Node* conv = match.node("conv");
    if (match.value("xs") != dql->outputs.at(1) || match.value("xzp") != dql->outputs.at(2))
      continue;
    const Tensor& ws = match.value("ws")->data;
    if (ws.numel() != 1 || !is_float(ws.dtype())) continue;
    if (n->outputs[0]->type.dtype != DType::kFloat32) continue;
    Tensor w = dequantize_weights(match.value("wq")->data, match.value("wzp")->data,
                                  ws.to_doubles()[0]);
    Attrs attrs = conv->attrs;
    n->op = "Conv";
    n->def = OpRegistry::global().find("Conv");
    n->inputs = {match.value("x"), g.add_constant(conv->name + "_dequantized_weight", w)};
    n->attrs = attrs;
    changed = true;
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace yoloc
