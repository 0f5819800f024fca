// Converters of the quantisation ops. QuantizeLinear-21's output_dtype only matters without a
// zero point; it becomes a zero-valued zero point of that type, so the IR op always takes its
// output type from the zero point (uint8 when absent).
#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"

namespace yoloc::onnx_frontend {

namespace {

void convert_quantize(ConvertContext& ctx) {
  const int64_t code = ctx.attrs().get_int("output_dtype", 0);
  Attrs a = ctx.attrs();
  a.erase("output_dtype");
  a.erase("saturate");  // affects float8 outputs only, which yoloc does not support
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

}  // namespace

YOLOC_REGISTER_CONVERTER("QuantizeLinear", 10, convert_quantize);
YOLOC_REGISTER_CONVERTER("DequantizeLinear", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("DynamicQuantizeLinear", 11, convert_passthrough);

}  // namespace yoloc::onnx_frontend
