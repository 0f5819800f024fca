// Converters of Resize and Upsample. The IR op has Resize-19's form. Upsample-7/9 and Resize-10
// had only `mode` and sampled at x_out / scale: that is coordinate_transformation_mode
// "asymmetric" with nearest_mode "floor" (ONNX Runtime rounds up instead when downsampling with
// nearest, a case those opsets left unspecified).
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

/// Emits Resize(X, scales) with the pre-opset-11 sampling rules.
void emit_legacy_resize(ConvertContext& ctx, Value* scales) {
  const std::string mode = ctx.attrs().get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    ctx.fail("mode '{}' is not supported (expected nearest or linear)", mode);
  Attrs a;
  a.set("mode", mode);
  a.set("coordinate_transformation_mode", std::string("asymmetric"));
  a.set("nearest_mode", std::string("floor"));
  ctx.emit("Resize", {ctx.input(0), nullptr, scales}, a);
}

void convert_upsample_7(ConvertContext& ctx) {
  const std::vector<float> s = ctx.attrs().get_floats("scales");
  emit_legacy_resize(
      ctx, ctx.constant(Tensor::from_vector<float>({static_cast<int64_t>(s.size())}, s), "scales"));
}

void convert_resize_10(ConvertContext& ctx) { emit_legacy_resize(ctx, ctx.input(1)); }

}  // namespace

YOLOC_REGISTER_CONVERTER("Upsample", 7, convert_upsample_7);
YOLOC_REGISTER_CONVERTER("Upsample", 9, convert_resize_10);
YOLOC_REGISTER_CONVERTER("Resize", 10, convert_resize_10);
YOLOC_REGISTER_CONVERTER("Resize", 11, convert_passthrough);

}  // namespace yoloc::onnx_frontend
