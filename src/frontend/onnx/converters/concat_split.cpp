// Converters of Concat, Split, Slice and Tile. Split took `split` and Slice took starts / ends /
// axes as attributes in older opsets; the IR ops take them as inputs.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

namespace {

/// Split < 13: attribute split -> input.
void convert_split_2(ConvertContext& ctx) {
  Attrs a = ctx.attrs();
  std::vector<Value*> ins{ctx.input(0)};
  if (a.has("split")) {
    ins.push_back(ints_constant(ctx, a.get_ints("split"), "split"));
    a.erase("split");
  }
  ctx.emit("Split", ins, a);
}

/// Slice < 10: attributes starts, ends, axes -> inputs.
void convert_slice_1(ConvertContext& ctx) {
  const Attrs& a = ctx.attrs();
  std::vector<Value*> ins{ctx.input(0), ints_constant(ctx, a.get_ints("starts"), "starts"),
                          ints_constant(ctx, a.get_ints("ends"), "ends")};
  if (a.has("axes")) ins.push_back(ints_constant(ctx, a.get_ints("axes"), "axes"));
  ctx.emit("Slice", ins, {});
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Concat", 4, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Split", 2, convert_split_2);
YOLOC_REGISTER_CONVERTER("Split", 13, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Slice", 1, convert_slice_1);
YOLOC_REGISTER_CONVERTER("Slice", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Tile", 6, convert_passthrough);

}  // namespace yoloc::onnx_frontend
