// Binary elementwise ops with numpy broadcasting: arithmetic (Add, Sub, Mul, Div, Pow, Mod, Max,
// Min), comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) and logic (And, Or, Xor).
#include <cmath>

#include "ops/op_common.h"

namespace yoloc {

namespace {

enum class Result { kSameAsInput, kBool };

/// Reference kernel over broadcast inputs: out = f(a, b), computed in T (Half/BFloat16 compute in
/// float and round once).
template <typename Out, typename T, typename F>
Tensor binary_kernel(const Node& n, const Tensor& a, const Tensor& b, F f) {
  const Shape out_shape = broadcast_shape({a.shape(), b.shape()}, n);
  Tensor out(dtype_of<Out>(), out_shape);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  Out* po = out.data<Out>();
  if (a.shape() == b.shape()) {
    for (int64_t i = 0; i < out.numel(); ++i) po[i] = f(pa[i], pb[i]);
  } else {
    for_each_broadcast(out_shape, {a.shape(), b.shape()},
                       [&](int64_t o, const int64_t* off) { po[o] = f(pa[off[0]], pb[off[1]]); });
  }
  return out;
}

void check_same_dtype(const Node& n, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    user_error("{}: both inputs must have the same element type, got {} and {}", n.label(),
               describe(a), describe(b));
}

std::vector<TensorType> infer_binary(const InferContext& ctx, Result r) {
  const TensorType& a = ctx.type(0);
  const TensorType& b = ctx.type(1);
  if (a.dtype != b.dtype)
    ctx.fail("both inputs must have the same element type, got {} and {}", a.str(), b.str());
  const DType out = r == Result::kBool ? DType::kBool : a.dtype;
  if (!a.has_rank || !b.has_rank) return {TensorType::unranked(out)};
  return {TensorType(out, broadcast_dims({&a, &b}, ctx.node))};
}

/// Registers an arithmetic op: f is applied in the element type (float compute for 16-bit
/// floats).
template <typename F>
OpDef arith(const char* name, uint32_t traits, F f, const char* doc, bool allow_bool = false) {
  OpDef d;
  d.name = name;
  d.traits = kTraitElementwise | traits;
  d.min_inputs = d.max_inputs = 2;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) { return infer_binary(ctx, Result::kSameAsInput); };
  d.reference = [f, allow_bool](const Node& n, const std::vector<Tensor>& in) {
    check_same_dtype(n, in[0], in[1]);
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      return std::vector<Tensor>{binary_kernel<T, T>(n, in[0], in[1], [&](T x, T y) -> T {
        return f(x, y);
      })};
    };
    if (allow_bool && in[0].dtype() == DType::kBool) return run(TypeTag<bool>{});
    return dispatch_numeric(in[0].dtype(), run, n.label());
  };
  return d;
}

template <typename F>
OpDef compare(const char* name, F f, const char* doc) {
  OpDef d;
  d.name = name;
  d.traits = kTraitElementwise;
  d.min_inputs = d.max_inputs = 2;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) { return infer_binary(ctx, Result::kBool); };
  d.reference = [f](const Node& n, const std::vector<Tensor>& in) {
    check_same_dtype(n, in[0], in[1]);
    return dispatch_all(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      return std::vector<Tensor>{binary_kernel<bool, T>(n, in[0], in[1], f)};
    });
  };
  return d;
}

template <typename F>
OpDef logic(const char* name, F f, const char* doc) {
  OpDef d = compare(name, f, doc);
  d.infer = [](const InferContext& ctx) {
    if (ctx.type(0).dtype != DType::kBool || ctx.type(1).dtype != DType::kBool)
      ctx.fail("inputs must be bool, got {} and {}", ctx.type(0).str(), ctx.type(1).str());
    return infer_binary(ctx, Result::kBool);
  };
  return d;
}

/// Integer division and modulo are undefined on zero in C++; ONNX leaves them undefined too.
/// Raise a clear error instead of crashing.
template <typename T>
void check_divisor(T y) {
  if constexpr (std::is_integral_v<T>)
    if (y == 0) user_error("integer division by zero");
}

template <typename T>
T fmod_like(T x, T y, bool fmod) {
  if constexpr (std::is_same_v<T, bool>) {
    internal_error("Mod on bool");  // excluded by dispatch_numeric
  } else if constexpr (std::is_integral_v<T>) {
    check_divisor(y);
    T r = static_cast<T>(x % y);
    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
    return r;
  } else {
    const double r = std::fmod(static_cast<double>(x), static_cast<double>(y));
    if (fmod) return static_cast<T>(r);
    if (r != 0 && ((r < 0) != (static_cast<double>(y) < 0))) return static_cast<T>(r + y);
    return static_cast<T>(r);
  }
}

}  // namespace

YOLOC_REGISTER_OP(arith("Add", kTraitCommutative, [](auto x, auto y) { return x + y; }, "a + b"));
YOLOC_REGISTER_OP(arith("Sub", 0, [](auto x, auto y) { return x - y; }, "a - b"));
YOLOC_REGISTER_OP(arith("Mul", kTraitCommutative, [](auto x, auto y) { return x * y; }, "a * b"));
YOLOC_REGISTER_OP(arith(
    "Div", 0,
    [](auto x, auto y) {
      check_divisor(y);
      return x / y;
    },
    "a / b (integer division truncates)"));
YOLOC_REGISTER_OP(arith(
    "Pow", 0,
    [](auto x, auto y) {
      using T = decltype(x);
      return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    },
    "a ** b"));
YOLOC_REGISTER_OP(arith("Max", kTraitCommutative, [](auto x, auto y) { return x < y ? y : x; },
                        "elementwise maximum of two inputs"));
YOLOC_REGISTER_OP(arith("Min", kTraitCommutative, [](auto x, auto y) { return y < x ? y : x; },
                        "elementwise minimum of two inputs"));
YOLOC_REGISTER_OP(arith("Mod", 0, [](auto x, auto y) { return fmod_like(x, y, false); },
                        "remainder with the divisor's sign (fmod=0)"));
YOLOC_REGISTER_OP(arith("FMod", 0, [](auto x, auto y) { return fmod_like(x, y, true); },
                        "remainder with the dividend's sign (Mod with fmod=1)"));
YOLOC_REGISTER_OP(compare("Equal", [](auto x, auto y) { return x == y; }, "a == b"));
YOLOC_REGISTER_OP(compare("Less", [](auto x, auto y) { return x < y; }, "a < b"));
YOLOC_REGISTER_OP(compare("Greater", [](auto x, auto y) { return y < x; }, "a > b"));
YOLOC_REGISTER_OP(compare("LessOrEqual", [](auto x, auto y) { return !(y < x) && x == x && y == y; }, "a <= b"));
YOLOC_REGISTER_OP(compare("GreaterOrEqual", [](auto x, auto y) { return !(x < y) && x == x && y == y; }, "a >= b"));
YOLOC_REGISTER_OP(logic("And", [](bool x, bool y) { return x && y; }, "logical and"));
YOLOC_REGISTER_OP(logic("Or", [](bool x, bool y) { return x || y; }, "logical or"));
YOLOC_REGISTER_OP(logic("Xor", [](bool x, bool y) { return x != y; }, "logical xor"));

}  // namespace yoloc
