// Converters of Cast, CastLike and Where. Cast's `to` (a TensorProto data type code) becomes the
// IR's dtype name; the `saturate` attribute (opset 19) only affects float8 targets and
// `round_mode` (opset 24) only float8e8m0 targets, which yoloc does not support, so both are
// ignored. CastLike becomes Cast: the target type is known at import.
#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"

namespace yoloc::onnx_frontend {

namespace {

void emit_cast(ConvertContext& ctx, DType to, int64_t onnx_code) {
  if (to == DType::kUndefined)
    ctx.fail("casting to ONNX element type {} is not supported (yoloc supports float, float16, "
             "bfloat16, double, bool and the 8- to 64-bit integers)",
             onnx_code);
  Attrs a;
  a.set("to", std::string(dtype_name(to)));
  ctx.emit("Cast", {ctx.input(0)}, a);
}

void convert_cast(ConvertContext& ctx) {
  const int64_t code = ctx.attrs().get_int("to");
  emit_cast(ctx, dtype_from_onnx(static_cast<int32_t>(code)), code);
}

void convert_cast_like(ConvertContext& ctx) {
  if (!ctx.input(0) || !ctx.input(1)) ctx.fail("needs two inputs (input, target_type)");
  emit_cast(ctx, ctx.input(1)->type.dtype, -1);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Cast", 6, convert_cast);
YOLOC_REGISTER_CONVERTER("CastLike", 15, convert_cast_like);
YOLOC_REGISTER_CONVERTER("Where", 9, convert_passthrough);

}  // namespace yoloc::onnx_frontend
