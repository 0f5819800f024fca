// Converters of the binary elementwise ops. Opsets < 7 had a `broadcast` attribute; yoloc
// imports opset >= 7 only, where broadcasting is implicit, so these pass through.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

void convert_mod(ConvertContext& ctx) {
  const bool fmod = ctx.attrs().get_int("fmod", 0) != 0;
  ctx.emit(fmod ? "FMod" : "Mod", ctx.inputs(), {});
}

void convert_pow(ConvertContext& ctx) {
  // Pow allows a different exponent type since opset 12; the IR op wants one type.
  Value* x = ctx.input(0);
  Value* y = ctx.input(1);
  if (x && y && x->type.dtype != y->type.dtype && y->type.dtype != DType::kUndefined) {
    Attrs a;
    a.set("to", std::string(dtype_name(x->type.dtype)));
    y = ctx.emit_internal("Cast", {y}, a)->outputs[0];
  }
  ctx.emit("Pow", {x, y}, {});
}

/// Max/Min/Sum of 1..N inputs -> a chain of binary ops (an Identity for one input).
void convert_variadic(ConvertContext& ctx) {
  const std::string op = ctx.op_type() == "Sum" ? "Add" : ctx.op_type();
  std::vector<Value*> ins = variadic_inputs(ctx);
  if (ins.size() == 1) {
    ctx.emit("Identity", ins, {});
    return;
  }
  Value* last = ins.back();
  ins.pop_back();
  ctx.emit(op, {chain_internal(ctx, op, ins), last}, {});
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Max", 8, convert_variadic);
YOLOC_REGISTER_CONVERTER("Min", 8, convert_variadic);
YOLOC_REGISTER_CONVERTER("Sum", 8, convert_variadic);
YOLOC_REGISTER_CONVERTER("Add", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Sub", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Mul", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Div", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Pow", 7, convert_pow);
YOLOC_REGISTER_CONVERTER("Mod", 10, convert_mod);
YOLOC_REGISTER_CONVERTER("Equal", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Less", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Greater", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("LessOrEqual", 12, convert_passthrough);
YOLOC_REGISTER_CONVERTER("GreaterOrEqual", 12, convert_passthrough);
YOLOC_REGISTER_CONVERTER("And", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Or", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Xor", 7, convert_passthrough);

}  // namespace yoloc::onnx_frontend
