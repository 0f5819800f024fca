// Converters of Pad. Pad-2 had pads and value as attributes; from Pad-11 they are inputs (the IR
// form), Pad-18 added axes and Pad-19 the wrap mode, both of which pass through.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

void convert_pad_2(ConvertContext& ctx) {
  const std::vector<int64_t> pads = ctx.attrs().get_ints("pads");
  Value* x = ctx.input(0);
  Tensor value = Tensor::scalar<float>(ctx.attrs().get_float("value", 0.0f)).cast(x->type.dtype);
  Attrs a;
  a.set("mode", ctx.attrs().get_string("mode", "constant"));
  ctx.emit("Pad", {x, ints_constant(ctx, pads, "pads"), ctx.constant(value, "value")}, a);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Pad", 2, convert_pad_2);
YOLOC_REGISTER_CONVERTER("Pad", 11, convert_passthrough);

}  // namespace yoloc::onnx_frontend
