// Ops that compute on shapes: Shape, Size, ConstantOfShape, Range, EyeLike. Shape and Size
// derive their values from input types alone, which starts the folding of shape sub-graphs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/op_common.h"

namespace yoloc {

namespace {

/// The dims [start, end) that Shape (opset 15) returns, clamped as the spec says.
std::pair<int64_t, int64_t> shape_range(const Attrs& a, int64_t rank) {
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  const int64_t start = clamp(a.get_int("start", 0));
  const int64_t end = clamp(a.get_int("end", rank));
  return {start, std::max(start, end)};
}

OpDef make_shape() {
  OpDef d;
  d.name = "Shape";
  d.traits = kTraitShape;
  d.doc = "the input's shape as int64[rank] (dims start..end)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return std::vector<TensorType>{TensorType(DType::kInt64, {Dim()})};
    const auto [s, e] = shape_range(ctx.attrs(), t.rank());
    return std::vector<TensorType>{TensorType(DType::kInt64, {Dim(e - s)})};
  };
  d.infer_value = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return Tensor();
    const auto [s, e] = shape_range(ctx.attrs(), t.rank());
    std::vector<int64_t> v;
    for (int64_t i = s; i < e; ++i) {
      const Dim& dim = t.dims[static_cast<size_t>(i)];
      if (!dim.known()) return Tensor();
      v.push_back(dim.value);
    }
    return Tensor::from_vector<int64_t>({e - s}, v);
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return std::nullopt;
    const auto [s, e] = shape_range(ctx.attrs(), t.rank());
    std::vector<SymElem> r;
    for (int64_t i = s; i < e; ++i) r.push_back(dim_to_sym(t.dims[static_cast<size_t>(i)]));
    return r;
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Shape& shape = in[0].shape();
    const auto [s, e] = shape_range(n.attrs, in[0].rank());
    return std::vector<Tensor>{
        Tensor::from_vector<int64_t>({e - s}, Shape(shape.begin() + s, shape.begin() + e))};
  };
  return d;
}

OpDef make_size() {
  OpDef d;
  d.name = "Size";
  d.traits = kTraitShape;
  d.doc = "the input's element count as an int64 scalar";
  d.infer = [](const InferContext&) {
    return std::vector<TensorType>{TensorType(DType::kInt64, {})};
  };
  d.infer_value = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.is_static()) return Tensor();
    return Tensor::scalar<int64_t>(shape_numel(t.static_shape()));
  };
  d.reference = [](const Node&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{Tensor::scalar<int64_t>(in[0].numel())};
  };
  return d;
}

/// ConstantOfShape's fill value: a one-element tensor (float32 0 when absent).
Tensor fill_value(const Node& n) {
  if (!n.attrs.has("value")) return Tensor::from_vector<float>({1}, {0.0f});
  const Tensor& v = n.attrs.get_tensor("value");
  if (v.numel() != 1)
    user_error("{}: attribute 'value' must hold exactly one element, got {}", n.label(),
               describe(v));
  return v;
}

Shape shape_from_tensor(const Node& n, const Tensor& t, const char* what) {
  if (t.rank() != 1) user_error("{}: {} must be 1-D, got {}", n.label(), what, describe(t));
  Shape s = t.to_int64s();
  for (int64_t d : s)
    if (d < 0)
      user_error("{}: {} must not hold negative dims, got {}", n.label(), what, shape_str(s));
  return s;
}

OpDef make_constant_of_shape() {
  OpDef d;
  d.name = "ConstantOfShape";
  d.traits = kTraitShape;
  d.doc = "a tensor of the given shape filled with attribute 'value'";
  d.infer = [](const InferContext& ctx) {
    const DType dt = fill_value(ctx.node).dtype();
    if (const auto elems = ctx.symbolic(0)) {
      std::vector<Dim> dims;
      for (const SymElem& e : *elems) {
        if (e.value && *e.value < 0) ctx.fail("the shape must not hold negative dims");
        dims.push_back(sym_to_dim(e));
      }
      return std::vector<TensorType>{TensorType(dt, dims)};
    }
    const TensorType& s = ctx.type(0);
    if (s.has_rank && s.rank() == 1 && s.dims[0].known())
      return std::vector<TensorType>{
          TensorType(dt, std::vector<Dim>(static_cast<size_t>(s.dims[0].value), Dim()))};
    return std::vector<TensorType>{TensorType::unranked(dt)};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor v = fill_value(n);
    Tensor out(v.dtype(), shape_from_tensor(n, in[0], "the shape input"));
    const size_t es = dtype_size(v.dtype());
    auto* dst = static_cast<uint8_t*>(out.raw());
    for (int64_t i = 0; i < out.numel(); ++i)
      std::memcpy(dst + static_cast<size_t>(i) * es, v.raw(), es);
    return std::vector<Tensor>{out};
  };
  return d;
}

/// Range's element count: max(ceil((limit - start) / delta), 0).
int64_t range_count(const Node& n, double start, double limit, double delta) {
  if (delta == 0) user_error("{}: delta must not be 0", n.label());
  const double c = std::ceil((limit - start) / delta);
  if (!(c < static_cast<double>(int64_t{1} << 40)))
    user_error("{}: range({}, {}, {}) has too many elements", n.label(), start, limit, delta);
  return std::max<int64_t>(0, static_cast<int64_t>(c));
}

/// Range-27's stash_type for 16-bit floats: 1 (float32, the default) or 11 (float64).
bool range_stash_double(const Node& n) {
  const int64_t stash = n.attrs.get_int("stash_type", 1);
  if (stash != 1 && stash != 11)
    user_error("{}: stash_type must be 1 (float) or 11 (double), got {}", n.label(), stash);
  return stash == 11;
}

OpDef make_range() {
  OpDef d;
  d.name = "Range";
  d.traits = kTraitShape;
  d.min_inputs = d.max_inputs = 3;
  d.doc = "start, start + delta, ... up to (excluding) limit";
  d.infer = [](const InferContext& ctx) {
    const DType dt = ctx.type(0).dtype;
    range_stash_double(ctx.node);
    for (size_t i = 1; i < 3; ++i)
      if (ctx.type(i).dtype != dt)
        ctx.fail("start, limit and delta must have the same type, got {}, {} and {}",
                 ctx.type(0).str(), ctx.type(1).str(), ctx.type(2).str());
    for (size_t i = 0; i < 3; ++i)
      if (ctx.type(i).has_rank &&
          !(ctx.type(i).rank() == 0 || (ctx.type(i).rank() == 1 && ctx.type(i).dims[0] == Dim(1))))
        ctx.fail("input {} must be a scalar, got {}", i, ctx.type(i).str());
    const Tensor* s = ctx.value(0);
    const Tensor* l = ctx.value(1);
    const Tensor* dl = ctx.value(2);
    if (s && l && dl)
      return std::vector<TensorType>{
          TensorType(dt, {Dim(range_count(ctx.node, s->to_doubles().at(0), l->to_doubles().at(0),
                                          dl->to_doubles().at(0)))})};
    return std::vector<TensorType>{TensorType(dt, {Dim()})};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    for (const Tensor& t : in)
      if (t.numel() != 1) user_error("{}: inputs must be scalars, got {}", n.label(), describe(t));
    return dispatch_numeric(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T start = in[0].data<T>()[0];
          const T delta = in[2].data<T>()[0];
          const int64_t count =
              range_count(n, static_cast<double>(start), static_cast<double>(in[1].data<T>()[0]),
                          static_cast<double>(delta));
          Tensor out(in[0].dtype(), {count});
          T* o = out.data<T>();
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            // Range-27's stash_type: start + i * delta in float32 or float64, rounded once.
            const bool f64 = range_stash_double(n);
            for (int64_t i = 0; i < count; ++i)
              o[i] = f64 ? static_cast<T>(static_cast<double>(start) +
                                          static_cast<double>(i) * static_cast<double>(delta))
                         : static_cast<T>(static_cast<float>(start) +
                                          static_cast<float>(i) * static_cast<float>(delta));
          } else {
            // Accumulate as the spec's function body (and ONNX Runtime) do.
            T v = start;
            for (int64_t i = 0; i < count; ++i) {
              o[i] = v;
              v = static_cast<T>(v + delta);
            }
          }
          return std::vector<Tensor>{out};
        },
        n.label());
  };
  return d;
}

DType eye_dtype(const Node& n, DType input) {
  if (!n.attrs.has("dtype")) return input;
  const std::string name = n.attrs.get_string("dtype");
  const DType t = dtype_from_name(name);
  if (t == DType::kUndefined || t == DType::kBool)
    user_error("{}: unsupported dtype '{}'", n.label(), name);
  return t;
}

OpDef make_eye_like() {
  OpDef d;
  d.name = "EyeLike";
  d.doc = "a 2-D tensor of the input's shape with ones on diagonal k";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (t.has_rank && t.rank() != 2) ctx.fail("the input must be 2-D, got {}", t.str());
    TensorType out = t;
    out.dtype = eye_dtype(ctx.node, t.dtype);
    return std::vector<TensorType>{out};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    if (in[0].rank() != 2)
      user_error("{}: the input must be 2-D, got {}", n.label(), describe(in[0]));
    Tensor out(eye_dtype(n, in[0].dtype()), in[0].shape());
    const int64_t k = n.attrs.get_int("k", 0);
    const int64_t rows = in[0].dim(0), cols = in[0].dim(1);
    dispatch_numeric(
        out.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* o = out.data<T>();
          if (k >= cols || k <= -rows) return;  // no diagonal element inside (also avoids overflow)
          for (int64_t r = std::max<int64_t>(0, -k); r < rows && r + k < cols; ++r)
            o[r * cols + r + k] = static_cast<T>(1);
        },
        n.label());
    return std::vector<Tensor>{out};
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(make_shape());
YOLOC_REGISTER_OP(make_size());
YOLOC_REGISTER_OP(make_constant_of_shape());
YOLOC_REGISTER_OP(make_range());
YOLOC_REGISTER_OP(make_eye_like());

}  // namespace yoloc
