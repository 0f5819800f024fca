// Converters of Softmax, LogSoftmax and Hardmax. Before opset 13 they worked on the input
// flattened to 2-D at `axis` (default 1); the IR op expresses that with coerce_2d=1 (see
// src/ops/softmax.cpp). When the axis is the last one both definitions agree, so the plain
// per-axis form is emitted, which later passes handle best.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

void convert_softmax_1(ConvertContext& ctx) {
  if (!ctx.input(0)) ctx.fail("input 0 is required");
  const int64_t axis = ctx.attrs().get_int("axis", 1);
  const TensorType& t = ctx.input(0)->type;
  const bool last = axis == -1 || (t.has_rank && axis == t.rank() - 1);
  Attrs a;
  a.set("axis", last ? int64_t{-1} : axis);
  if (!last) a.set("coerce_2d", int64_t{1});
  ctx.emit(ctx.op_type(), {ctx.input(0)}, a);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Softmax", 1, convert_softmax_1);
YOLOC_REGISTER_CONVERTER("Softmax", 13, convert_passthrough);
YOLOC_REGISTER_CONVERTER("LogSoftmax", 1, convert_softmax_1);
YOLOC_REGISTER_CONVERTER("LogSoftmax", 13, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Hardmax", 1, convert_softmax_1);
YOLOC_REGISTER_CONVERTER("Hardmax", 13, convert_passthrough);

}  // namespace yoloc::onnx_frontend
