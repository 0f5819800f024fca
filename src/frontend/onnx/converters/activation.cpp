// Converters of the activation ops. Only Clip changed its signature between opsets 7 and 21:
// opset 11 turned the min/max attributes into optional inputs (the IR form).
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

}  // namespace

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
