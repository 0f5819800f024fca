// Converters of the reshape ops. Squeeze and Unsqueeze took `axes` as an attribute before
// opset 13; the IR op takes it as an input.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

/// Squeeze/Unsqueeze < 13: attribute axes -> constant input (Squeeze without axes keeps none).
void convert_axes_attr(ConvertContext& ctx) {
  Attrs a = ctx.attrs();
  std::vector<Value*> ins{ctx.input(0)};
  if (a.has("axes")) {
    ins.push_back(ints_constant(ctx, a.get_ints("axes"), "axes"));
    a.erase("axes");
  } else if (ctx.op_type() == "Unsqueeze") {
    ctx.fail("attribute 'axes' is required");
  }
  ctx.emit(ctx.op_type(), ins, a);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Reshape", 5, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Flatten", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Squeeze", 1, convert_axes_attr);
YOLOC_REGISTER_CONVERTER("Squeeze", 13, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Unsqueeze", 1, convert_axes_attr);
YOLOC_REGISTER_CONVERTER("Unsqueeze", 13, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Expand", 8, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Transpose", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("DepthToSpace", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("SpaceToDepth", 1, convert_passthrough);

}  // namespace yoloc::onnx_frontend
