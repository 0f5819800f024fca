// Converters of the normalisations. BatchNormalization before opset 14 lists training outputs
// (mean, var, saved_mean, saved_var) that are meaningless at inference; the IR op has the
// opset-14 form, where running statistics are outputs only with training_mode=1.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

void convert_batch_norm_7(ConvertContext& ctx) {
  if (ctx.attrs().get_int("spatial", 1) != 1)
    ctx.fail(
        "spatial=0 (per-activation statistics) is not supported; re-export the model with "
        "opset >= 9");
  for (int i = 1; i < ctx.proto.output_size(); ++i)
    if (!ctx.proto.output(i).empty())
      ctx.fail(
          "the training outputs (output {} '{}') are not supported; export the model in "
          "inference mode",
          i, ctx.proto.output(i));
  Attrs a;
  a.set("epsilon", ctx.attrs().get_float("epsilon", 1e-5f));
  a.set("momentum", ctx.attrs().get_float("momentum", 0.9f));
  ctx.emit("BatchNormalization", ctx.inputs(), a);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("BatchNormalization", 7, convert_batch_norm_7);
YOLOC_REGISTER_CONVERTER("BatchNormalization", 14, convert_passthrough);
YOLOC_REGISTER_CONVERTER("InstanceNormalization", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("LayerNormalization", 17, convert_passthrough);

}  // namespace yoloc::onnx_frontend
