// Cast (element type conversion; attribute "to" is a dtype name) and Where (select by a bool
// condition, with broadcasting). ONNX CastLike is imported as Cast: the IR is typed, so the
// target type is always known at import and one conversion op is enough for the passes.
#include "ops/op_common.h"

namespace yoloc {

namespace {

DType cast_target(const Node& n) {
  const std::string to = n.attrs.get_string("to");
  const DType t = dtype_from_name(to);
  if (t == DType::kUndefined)
    user_error("{}: attribute to='{}' is not a supported element type (expected a name such as "
               "'float32', 'float16', 'int64', 'bool')",
               n.label(), to);
  return t;
}

OpDef cast_def() {
  OpDef d;
  d.name = "Cast";
  d.traits = kTraitElementwise;
  d.doc = "converts the elements to dtype `to` (float -> int truncates toward zero)";
  d.infer = [](const InferContext& ctx) {
    if (!ctx.has_input(0)) ctx.fail("input 0 is required");
    TensorType t = ctx.type(0);
    t.dtype = cast_target(ctx.node);
    return std::vector<TensorType>{t};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const DType to = cast_target(n);
    return std::vector<Tensor>{in[0].dtype() == to ? in[0] : in[0].cast(to)};
  };
  return d;
}

OpDef where_def() {
  OpDef d;
  d.name = "Where";
  d.traits = kTraitElementwise;
  d.min_inputs = d.max_inputs = 3;
  d.doc = "cond ? x : y, all three broadcast";
  d.infer = [](const InferContext& ctx) {
    const TensorType& c = ctx.type(0);
    const TensorType& x = ctx.type(1);
    const TensorType& y = ctx.type(2);
    if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
      ctx.fail("all three inputs (condition, x, y) are required");
    if (c.dtype != DType::kBool) ctx.fail("condition must be bool, got {}", c.str());
    if (x.dtype != y.dtype)
      ctx.fail("x and y must have the same element type, got {} and {}", x.str(), y.str());
    if (!c.has_rank || !x.has_rank || !y.has_rank)
      return std::vector<TensorType>{TensorType::unranked(x.dtype)};
    return std::vector<TensorType>{TensorType(x.dtype, broadcast_dims({&c, &x, &y}, ctx.node))};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& c = in[0];
    const Tensor& x = in[1];
    const Tensor& y = in[2];
    if (c.dtype() != DType::kBool || x.dtype() != y.dtype())
      user_error("{}: expected a bool condition and x, y of one type, got {}, {}, {}", n.label(),
                 describe(c), describe(x), describe(y));
    const Shape out_shape = broadcast_shape({c.shape(), x.shape(), y.shape()}, n);
    return dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor out(x.dtype(), out_shape);
      const bool* pc = c.data<bool>();
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* po = out.data<T>();
      for_each_broadcast(out_shape, {c.shape(), x.shape(), y.shape()},
                         [&](int64_t o, const int64_t* off) {
                           po[o] = pc[off[0]] ? px[off[1]] : py[off[2]];
                         });
      return std::vector<Tensor>{out};
    });
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(cast_def());
YOLOC_REGISTER_OP(where_def());

}  // namespace yoloc
