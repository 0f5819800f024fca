// Converters of the activation ops, and of Dropout (an identity at inference). Only Clip changed
// its signature between opsets 6 and 28: opset 11 turned the min/max attributes into optional
// inputs (the IR form); later versions only added element types. Swish (opset 24) becomes SiLU
// when alpha is 1, the form graph passes and backends know.
#include <optional>

#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

/// Clip-6: attributes min/max -> scalar constant inputs of x's element type. An absent attribute
/// (ONNX's default of -/+FLT_MAX) becomes an omitted bound, which does not clip.
void convert_clip_6(ConvertContext& ctx) {
  Value* x = ctx.input(0);
  if (!x) ctx.fail("input 0 is required");
  std::vector<Value*> ins{x};
  for (const char* name : {"min", "max"}) {
    if (!ctx.attrs().has(name)) {
      ins.push_back(nullptr);
      continue;
    }
    const float v = ctx.attrs().get_float(name);
    ins.push_back(ctx.constant(Tensor::scalar<float>(v).cast(x->type.dtype), name));
  }
  while (ins.size() > 1 && !ins.back()) ins.pop_back();
  ctx.emit("Clip", ins, {});
}

void convert_swish(ConvertContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  if (alpha == 1.0f) {
    ctx.emit("SiLU", {ctx.input(0)}, {});
    return;
  }
  Attrs a;
  a.set("alpha", alpha);
  ctx.emit("Swish", {ctx.input(0)}, a);
}

/// The value of a constant one-element input, or nullopt when it is not known at import.
std::optional<double> known_scalar(ConvertContext& ctx, Value* v, const char* what) {
  const Tensor* t = v ? v->known() : nullptr;
  if (!t) return std::nullopt;
  if (t->numel() != 1) ctx.fail("{} must hold one element, got {}", what, describe(*t));
  return t->to_doubles()[0];
}

/// Dropout at inference: the output is the input and the mask is all ones (T before opset 10,
/// bool since). In training mode (opset 12's third input) dropout is random, except that a ratio
/// of 0 keeps everything; yoloc accepts training mode only then.
void convert_dropout(ConvertContext& ctx) {
  Value* x = ctx.input(0);
  if (!x) ctx.fail("input 0 is required");
  if (Value* training = ctx.input(2)) {
    const std::optional<double> on = known_scalar(ctx, training, "training_mode");
    if (!on)
      ctx.fail("training_mode must be a constant (yoloc runs inference: make it false)");
    if (*on != 0) {
      // Opset 12's default ratio is 0.5.
      const std::optional<double> ratio =
          ctx.input(1) ? known_scalar(ctx, ctx.input(1), "ratio") : std::optional<double>(0.5);
      if (ratio != 0.0)
        ctx.fail("training-mode dropout with a ratio other than 0 is random; yoloc runs "
                 "inference (set training_mode to false)");
    }
  }
  const bool mask = ctx.num_outputs() > 1 && !ctx.proto.output(1).empty();
  if (!mask) {
    ctx.emit("Identity", {x}, {});
    return;
  }
  ctx.alias_output(0, ctx.emit_internal("Identity", {x}, {})->outputs[0]);
  Value* shape = ctx.emit_internal("Shape", {x}, {})->outputs[0];
  Attrs fill;
  fill.set("value", ctx.opset < 10 ? Tensor::from_vector<float>({1}, {1.0f}).cast(x->type.dtype)
                                   : Tensor::from_vector<bool>({1}, {true}));
  ctx.alias_output(1, ctx.emit_internal("ConstantOfShape", {shape}, fill)->outputs[0]);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Dropout", 7, convert_dropout);
YOLOC_REGISTER_CONVERTER("Swish", 24, convert_swish);
YOLOC_REGISTER_CONVERTER("Sigmoid", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Tanh", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Relu", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("LeakyRelu", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Elu", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Selu", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Celu", 12, convert_passthrough);
YOLOC_REGISTER_CONVERTER("HardSigmoid", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("HardSwish", 14, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Softplus", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Softsign", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Mish", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Gelu", 20, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ThresholdedRelu", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("PRelu", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Clip", 6, convert_clip_6);
YOLOC_REGISTER_CONVERTER("Clip", 11, convert_passthrough);

}  // namespace yoloc::onnx_frontend
