// Converters of the reductions and of Mean. Reduce* took `axes` as an attribute until opset 18
// (ReduceSum: 13); older converters turn it into the constant axes input of the IR form.
// ArgMax/ArgMin kept their signature (opset 12 added select_last_index, default 0).
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

void convert_reduce_axes_attr(ConvertContext& ctx) {
  std::vector<Value*> ins{ctx.input(0)};
  if (ctx.attrs().has("axes")) {
    ins.push_back(ints_constant(ctx, ctx.attrs().get_ints("axes"), "axes"));
  }
  Attrs a;
  a.set("keepdims", ctx.attrs().get_int("keepdims", 1));
  ctx.emit(ctx.op_type(), ins, a);
}

/// Mean of 1..N inputs -> a chain of Adds divided by N (an Identity for one input).
void convert_mean(ConvertContext& ctx) {
  const std::vector<Value*> ins = variadic_inputs(ctx);
  if (ins.size() == 1) {
    ctx.emit("Identity", ins, {});
    return;
  }
  Value* acc = chain_internal(ctx, "Add", ins);
  const Tensor n = Tensor::scalar<float>(static_cast<float>(ins.size())).cast(acc->type.dtype);
  ctx.emit("Div", {acc, ctx.constant(n, "count")}, {});
}

}  // namespace

YOLOC_REGISTER_CONVERTER("ReduceSum", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceSum", 13, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceMax", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceMax", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceMin", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceMin", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceMean", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceMean", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceProd", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceProd", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceL1", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceL1", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceL2", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceL2", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceLogSum", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceLogSum", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceLogSumExp", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceLogSumExp", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ReduceSumSquare", 1, convert_reduce_axes_attr);
YOLOC_REGISTER_CONVERTER("ReduceSumSquare", 18, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ArgMax", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ArgMin", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Mean", 6, convert_mean);

}  // namespace yoloc::onnx_frontend
