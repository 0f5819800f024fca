// Converters of the index ops. TopK took K as an attribute before opset 10; Scatter (opsets
// 9-10) is ScatterElements under an older name.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

/// TopK < 10: attribute k -> input K.
void convert_topk_1(ConvertContext& ctx) {
  Attrs a = ctx.attrs();
  Value* k = ctx.constant(Tensor::from_vector<int64_t>({1}, {a.get_int("k")}), "k");
  a.erase("k");
  ctx.emit("TopK", {ctx.input(0), k}, a);
}

void convert_scatter(ConvertContext& ctx) {
  ctx.emit("ScatterElements", ctx.inputs(), ctx.attrs());
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Gather", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("GatherElements", 11, convert_passthrough);
YOLOC_REGISTER_CONVERTER("GatherND", 11, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ScatterND", 11, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ScatterElements", 11, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Scatter", 9, convert_scatter);
YOLOC_REGISTER_CONVERTER("TopK", 1, convert_topk_1);
YOLOC_REGISTER_CONVERTER("TopK", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("NonZero", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Trilu", 14, convert_passthrough);

}  // namespace yoloc::onnx_frontend
