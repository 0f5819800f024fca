// Converters of the quantisation ops. QuantizeLinear-21's output_dtype only matters without a
// zero point; it becomes a zero-valued zero point of that type, so the IR op always takes its
// output type from the zero point (uint8 when absent). QuantizeLinear-23's `precision` names the
// type x / scale is computed in: the IR op divides in float32, so only that is accepted.
// DequantizeLinear-23's output_dtype becomes a Cast of the output (the IR op's output has the
// scale's type).
#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"

namespace yoloc::onnx_frontend {

namespace {

/// Opset 21's blocked quantisation: the IR ops quantise per tensor or per axis only.
void reject_blocked(ConvertContext& ctx) {
  const int64_t block = ctx.attrs().get_int("block_size", 0);
  if (block != 0)
    ctx.fail("blocked quantisation (block_size {}) is not supported; yoloc quantises per tensor "
             "or per axis",
             block);
}

void convert_quantize(ConvertContext& ctx) {
  reject_blocked(ctx);
  const int64_t code = ctx.attrs().get_int("output_dtype", 0);
  Attrs a = ctx.attrs();
  a.erase("output_dtype");
  a.erase("saturate");  // affects float8 outputs only, which yoloc does not support
  const int64_t precision = a.get_int("precision", 0);
  a.erase("precision");
  // 0 means the scale's type; the IR op computes in float32 whatever the scale's type.
  if (precision != 0 && dtype_from_onnx(static_cast<int32_t>(precision)) != DType::kFloat32)
    ctx.fail("precision {} is not supported: yoloc computes x / scale in float32 (precision 1)",
             precision);
  std::vector<Value*> ins = ctx.inputs();
  if (code != 0) {
    const DType t = dtype_from_onnx(static_cast<int32_t>(code));
    if (t == DType::kUndefined) ctx.fail("output_dtype {} is not supported", code);
    if (ins.size() > 2 && ins[2]) {
      if (ins[2]->type.dtype != t)
        ctx.fail("output_dtype {} disagrees with the zero point's type {}", dtype_name(t),
                 ins[2]->type.str());
    } else {
      ins.resize(3);
      ins[2] = ctx.constant(Tensor(t, {}), "zero_point");
    }
  }
  ctx.emit("QuantizeLinear", ins, a);
}

void convert_dequantize(ConvertContext& ctx) {
  reject_blocked(ctx);
  const int64_t code = ctx.attrs().get_int("output_dtype", 0);
  Attrs a = ctx.attrs();
  a.erase("output_dtype");
  Value* scale = ctx.input(1);
  const DType out = code == 0 ? DType::kUndefined : dtype_from_onnx(static_cast<int32_t>(code));
  if (code != 0 && !is_float(out))
    ctx.fail("output_dtype {} is not supported (float, float16 or bfloat16 expected)", code);
  if (code == 0 || !scale || scale->type.dtype == out) {
    ctx.emit("DequantizeLinear", ctx.inputs(), a);
    return;
  }
  // The IR op computes (x - zero_point) * scale in float32 and rounds once to the scale's type:
  // widening a 16-bit scale to float32 is exact, so the only rounding is the final Cast's.
  std::vector<Value*> ins = ctx.inputs();
  Attrs to_float;
  to_float.set("to", std::string(dtype_name(DType::kFloat32)));
  if (scale->type.dtype != DType::kFloat32)
    ins[1] = ctx.emit_internal("Cast", {scale}, to_float)->outputs[0];
  if (out == DType::kFloat32) {
    ctx.emit("DequantizeLinear", ins, a);
    return;
  }
  Value* y = ctx.emit_internal("DequantizeLinear", ins, a)->outputs[0];
  Attrs cast;
  cast.set("to", std::string(dtype_name(out)));
  ctx.emit("Cast", {y}, cast);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("QuantizeLinear", 10, convert_quantize);
YOLOC_REGISTER_CONVERTER("DequantizeLinear", 10, convert_dequantize);
YOLOC_REGISTER_CONVERTER("DynamicQuantizeLinear", 11, convert_passthrough);

}  // namespace yoloc::onnx_frontend
