// Converters of the shape ops, and of Constant, which becomes a constant value (no IR node).
#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"

namespace yoloc::onnx_frontend {

namespace {

/// The tensor of a Constant node: exactly one of value, value_float(s), value_int(s).
Tensor constant_tensor(ConvertContext& ctx) {
  const Attrs& a = ctx.attrs();
  std::vector<std::string> given;
  for (const auto& [name, v] : a.all()) given.push_back(name);
  if (given.size() != 1)
    ctx.fail(
        "expects exactly one of value, value_float, value_floats, value_int, value_ints; "
        "got [{}]",
        fmt::join(given, ", "));
  const std::string& name = given[0];
  if (name == "value") return a.get_tensor("value");
  if (name == "value_float") return Tensor::scalar<float>(a.get_float("value_float"));
  if (name == "value_int") return Tensor::scalar<int64_t>(a.get_int("value_int"));
  if (name == "value_floats") {
    const std::vector<float> v = a.get_floats("value_floats");
    return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (name == "value_ints") {
    const std::vector<int64_t> v = a.get_ints("value_ints");
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  if (name == "sparse_value")
    ctx.fail("sparse constants are not supported; densify the model (e.g. with onnx-simplifier)");
  if (name == "value_string" || name == "value_strings")
    ctx.fail("string constants are not supported");
  ctx.fail("unknown attribute '{}'", name);
}

void convert_constant(ConvertContext& ctx) {
  // The value is named after the node's output, so printed graphs keep the model's names.
  ctx.alias_output(0, ctx.graph.add_constant(ctx.proto.output(0), constant_tensor(ctx)));
}

void convert_eye_like(ConvertContext& ctx) {
  Attrs a = ctx.attrs();
  if (a.has("dtype")) {
    const int64_t code = a.get_int("dtype");
    const DType t = dtype_from_onnx(static_cast<int32_t>(code));
    if (t == DType::kUndefined) ctx.fail("unsupported dtype code {}", code);
    a.set("dtype", std::string(dtype_name(t)));
  }
  ctx.emit("EyeLike", ctx.inputs(), a);
}

}  // namespace

YOLOC_REGISTER_CONVERTER("Constant", 1, convert_constant);
YOLOC_REGISTER_CONVERTER("Shape", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Size", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ConstantOfShape", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Range", 11, convert_passthrough);
YOLOC_REGISTER_CONVERTER("EyeLike", 9, convert_eye_like);

}  // namespace yoloc::onnx_frontend
