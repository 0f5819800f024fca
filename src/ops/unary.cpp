// Unary elementwise math: Abs, Neg, Sign, rounding, exp/log/sqrt, trigonometric and hyperbolic
// functions, Erf, Not, IsNaN, IsInf and Identity.
#include <cmath>
#include <limits>

#include "ops/unary_common.h"

namespace yoloc {

namespace {

/// -x with two's-complement wrap-around: negating the most negative integer is UB in C++, ONNX
/// Runtime wraps.
template <typename T>
T wrapping_neg(T x) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U{0} - static_cast<U>(x)));
  } else {
    return static_cast<T>(-static_cast<double>(x));
  }
}

template <typename T>
T abs_value(T x) {
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
    return x;
  } else if constexpr (std::is_integral_v<T>) {
    return x < 0 ? wrapping_neg(x) : x;
  } else {
    return static_cast<T>(std::fabs(static_cast<double>(x)));
  }
}

template <typename T>
T sign_value(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;
  } else {
    const double v = static_cast<double>(x);
    if (v != v) return x;  // NaN stays NaN
    return static_cast<T>(v > 0 ? 1 : (v < 0 ? -1 : 0));
  }
}

/// A float -> bool predicate op (IsNaN, IsInf); `make(node)` returns `bool(double)`.
template <typename Make>
OpDef float_predicate(const char* name, const char* doc, Make make) {
  OpDef d;
  d.name = name;
  d.traits = kTraitElementwise;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    require_types(ctx, 0, TypeSet::kFloat);
    TensorType t = ctx.type(0);
    t.dtype = DType::kBool;
    return std::vector<TensorType>{t};
  };
  d.reference = [make](const Node& n, const std::vector<Tensor>& in) {
    auto f = make(n);
    return dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          return std::vector<Tensor>{
              map_elements<bool, T>(in[0], [&](T x) { return f(static_cast<double>(x)); })};
        },
        n.label());
  };
  return d;
}

OpDef identity_def() {
  OpDef d;
  d.name = "Identity";
  d.traits = kTraitElementwise | kTraitInjective | kTraitReshape;
  d.doc = "output = input";
  d.infer = [](const InferContext& ctx) {
    require_types(ctx, 0, TypeSet::kAll);
    return infer_same_as_input0(ctx);
  };
  d.reference = [](const Node&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0]};
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(typed_unary("Abs", "|x|", TypeSet::kNumeric,
                              no_attrs([](auto x) { return abs_value(x); })));
YOLOC_REGISTER_OP(typed_unary("Neg", "-x (integers wrap)", TypeSet::kSigned,
                              no_attrs([](auto x) { return wrapping_neg(x); })));
YOLOC_REGISTER_OP(typed_unary("Sign", "-1, 0 or 1 by the sign of x (NaN stays NaN)",
                              TypeSet::kNumeric, no_attrs([](auto x) { return sign_value(x); })));
YOLOC_REGISTER_OP(typed_unary("Not", "logical not", TypeSet::kBool, no_attrs([](auto x) {
                                return static_cast<decltype(x)>(!static_cast<bool>(x));
                              })));

YOLOC_REGISTER_OP(float_unary_fn("Exp", "e^x", [](double x) { return std::exp(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Log", "natural logarithm", [](double x) { return std::log(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Sqrt", "square root", [](double x) { return std::sqrt(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Reciprocal", "1 / x", [](double x) { return 1.0 / x; }));
YOLOC_REGISTER_OP(float_unary_fn("Floor", "round down", [](double x) { return std::floor(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Ceil", "round up", [](double x) { return std::ceil(x); }));
// nearbyint in the default rounding mode rounds halves to even, as ONNX Round requires.
YOLOC_REGISTER_OP(float_unary_fn("Round", "round to nearest, halves to even",
                                 [](double x) { return std::nearbyint(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Sin", "sine", [](double x) { return std::sin(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Cos", "cosine", [](double x) { return std::cos(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Tan", "tangent", [](double x) { return std::tan(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Asin", "arcsine", [](double x) { return std::asin(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Acos", "arccosine", [](double x) { return std::acos(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Atan", "arctangent", [](double x) { return std::atan(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Sinh", "hyperbolic sine", [](double x) { return std::sinh(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Cosh", "hyperbolic cosine",
                                 [](double x) { return std::cosh(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Asinh", "inverse hyperbolic sine",
                                 [](double x) { return std::asinh(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Acosh", "inverse hyperbolic cosine",
                                 [](double x) { return std::acosh(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Atanh", "inverse hyperbolic tangent",
                                 [](double x) { return std::atanh(x); }));
YOLOC_REGISTER_OP(float_unary_fn("Erf", "Gauss error function",
                                 [](double x) { return std::erf(x); }));

YOLOC_REGISTER_OP(float_predicate("IsNaN", "x is NaN", no_attrs([](double x) { return x != x; })));
YOLOC_REGISTER_OP(float_predicate(
    "IsInf", "x is +inf (detect_positive, default 1) or -inf (detect_negative, default 1)",
    [](const Node& n) {
      const bool neg = n.attrs.get_int("detect_negative", 1) != 0;
      const bool pos = n.attrs.get_int("detect_positive", 1) != 0;
      return [neg, pos](double x) {
        return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg));
      };
    }));

YOLOC_REGISTER_OP(identity_def());

}  // namespace yoloc
