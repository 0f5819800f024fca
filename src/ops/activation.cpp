// Activation functions: Sigmoid, Tanh, Relu and its variants, Softplus, Mish, Gelu, SiLU (the
// fused x * sigmoid(x) that graph passes produce), Swish (x * sigmoid(alpha * x)), PRelu
// (broadcast slope) and Clip.
#include <algorithm>
#include <cmath>

#include "ops/unary_common.h"

namespace yoloc {

namespace {

/// 1 / (1 + e^-x) without overflow for large |x|.
double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

/// log(1 + e^x) without overflow for large x.
double softplus(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

double attr(const Node& n, const char* name, float dflt) {
  return static_cast<double>(n.attrs.get_float(name, dflt));
}

/// Gelu's "approximate" attribute: false for "none", true for "tanh".
bool gelu_uses_tanh(const Node& n) {
  const std::string a = n.attrs.get_string("approximate", "none");
  if (a != "none" && a != "tanh")
    user_error("{}: attribute approximate must be 'none' or 'tanh', got '{}'", n.label(), a);
  return a == "tanh";
}

/// SiLU rounds the sigmoid to the element type before the product, exactly as the Sigmoid + Mul
/// pair it replaces does, so the canonicalize pass changes no bit of a model's outputs.
OpDef silu_def() {
  OpDef d = float_unary_fn("SiLU", "x * sigmoid(x) (fused by graph passes)",
                           [](double x) { return x * sigmoid(x); });
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    Tensor out(in[0].dtype(), in[0].shape());
    dispatch_float(
        in[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* x = in[0].data<T>();
          T* y = out.data<T>();
          for (int64_t i = 0; i < out.numel(); ++i) {
            const T s = static_cast<T>(sigmoid(static_cast<double>(x[i])));
            y[i] = static_cast<T>(x[i] * s);
          }
        },
        n.label());
    return std::vector<Tensor>{out};
  };
  return d;
}

OpDef gelu_def() {
  OpDef d = float_unary(
      "Gelu", "x * Phi(x) (approximate='none') or its tanh approximation", [](const Node& n) {
        const bool tanh = gelu_uses_tanh(n);
        return [tanh](double x) {
          if (tanh) {
            const double k = std::sqrt(2.0 / M_PI);
            return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
          }
          return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        };
      });
  d.infer = [base = d.infer](const InferContext& ctx) {
    gelu_uses_tanh(ctx.node);
    return base(ctx);
  };
  return d;
}

OpDef relu_def() {
  return typed_unary("Relu", "max(x, 0)", TypeSet::kSigned, no_attrs([](auto x) {
                       using T = decltype(x);
                       return static_cast<double>(x) < 0 ? T(0) : x;  // NaN stays NaN
                     }));
}

OpDef prelu_def() {
  OpDef d;
  d.name = "PRelu";
  d.traits = kTraitElementwise;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "x < 0 ? slope * x : x, slope broadcast to x";
  d.infer = [](const InferContext& ctx) {
    require_types(ctx, 0, TypeSet::kNumeric);
    const TensorType& x = ctx.type(0);
    const TensorType& s = ctx.type(1);
    if (x.dtype != s.dtype)
      ctx.fail("slope must have the element type of x, got x {} and slope {}", x.str(), s.str());
    if (!x.has_rank || !s.has_rank) return std::vector<TensorType>{TensorType::unranked(x.dtype)};
    if (s.rank() > x.rank())
      ctx.fail("slope {} must broadcast to x {} (its rank is larger)", s.str(), x.str());
    return std::vector<TensorType>{TensorType(x.dtype, broadcast_dims({&x, &s}, ctx.node))};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& s = in[1];
    if (x.dtype() != s.dtype())
      user_error("{}: slope must have the element type of x, got {} and {}", n.label(),
                 describe(x), describe(s));
    const Shape out_shape = broadcast_shape({x.shape(), s.shape()}, n);
    if (out_shape != x.shape())
      user_error("{}: slope {} does not broadcast to x {}", n.label(), describe(s), describe(x));
    return dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          Tensor out(x.dtype(), out_shape);
          const T* px = x.data<T>();
          const T* ps = s.data<T>();
          T* po = out.data<T>();
          for_each_broadcast(out_shape, {x.shape(), s.shape()}, [&](int64_t o, const int64_t* off) {
            const T v = px[off[0]];
            if constexpr (kIsFloatElem<T>) {
              const double xv = static_cast<double>(v);
              po[o] = xv < 0 ? static_cast<T>(static_cast<double>(ps[off[1]]) * xv) : v;
            } else if constexpr (std::is_signed_v<T>) {
              // Multiplying in uint64 wraps like ONNX Runtime instead of overflowing (UB).
              const uint64_t p = static_cast<uint64_t>(ps[off[1]]) * static_cast<uint64_t>(v);
              po[o] = v < 0 ? static_cast<T>(p) : v;
            } else {
              po[o] = v;  // unsigned values are never negative
            }
          });
          return std::vector<Tensor>{out};
        },
        n.label());
  };
  return d;
}

OpDef clip_def() {
  OpDef d;
  d.name = "Clip";
  d.traits = kTraitElementwise;
  d.min_inputs = 1;
  d.max_inputs = 3;
  d.doc = "min(max(x, min), max); an omitted bound does not clip";
  d.infer = [](const InferContext& ctx) {
    require_types(ctx, 0, TypeSet::kNumeric);
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const TensorType& b = ctx.type(i);
      if (b.dtype != ctx.type(0).dtype)
        ctx.fail("bound {} must have the element type of x {}, got {}", i, ctx.type(0).str(),
                 b.str());
      if (b.is_static() && shape_numel(b.static_shape()) != 1)
        ctx.fail("bound {} must be a scalar, got {}", i, b.str());
    }
    return infer_same_as_input0(ctx);
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i].defined() && (in[i].dtype() != x.dtype() || in[i].numel() != 1))
        user_error("{}: bound {} must be a scalar of x's type {}, got {}", n.label(), i,
                   dtype_name(x.dtype()), describe(in[i]));
    return dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const bool has_lo = in.size() > 1 && in[1].defined();
          const bool has_hi = in.size() > 2 && in[2].defined();
          const T lo = has_lo ? in[1].data<T>()[0] : T{};
          const T hi = has_hi ? in[2].data<T>()[0] : T{};
          return std::vector<Tensor>{map_elements<T, T>(x, [&](T v) {
            if (has_lo && v < lo) v = lo;
            if (has_hi && hi < v) v = hi;
            return v;
          })};
        },
        n.label());
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(float_unary_fn("Sigmoid", "1 / (1 + e^-x)", sigmoid));
YOLOC_REGISTER_OP(float_unary_fn("Tanh", "hyperbolic tangent",
                                 [](double x) { return std::tanh(x); }));
YOLOC_REGISTER_OP(silu_def());
YOLOC_REGISTER_OP(relu_def());
YOLOC_REGISTER_OP(float_unary("LeakyRelu", "x < 0 ? alpha * x : x (alpha 0.01)",
                              [](const Node& n) {
                                const double a = attr(n, "alpha", 0.01f);
                                return [a](double x) { return x < 0 ? a * x : x; };
                              }));
YOLOC_REGISTER_OP(float_unary("Elu", "x < 0 ? alpha * (e^x - 1) : x (alpha 1)",
                              [](const Node& n) {
                                const double a = attr(n, "alpha", 1.0f);
                                return [a](double x) { return x < 0 ? a * std::expm1(x) : x; };
                              }));
YOLOC_REGISTER_OP(float_unary(
    "Selu", "gamma * (x > 0 ? x : alpha * (e^x - 1))", [](const Node& n) {
      const double a = attr(n, "alpha", 1.67326319217681884765625f);
      const double g = attr(n, "gamma", 1.05070102214813232421875f);
      return [a, g](double x) { return x > 0 ? g * x : g * a * std::expm1(x); };
    }));
YOLOC_REGISTER_OP(float_unary(
    "Celu", "max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) (alpha 1)", [](const Node& n) {
      const double a = attr(n, "alpha", 1.0f);
      return [a](double x) { return std::max(0.0, x) + std::min(0.0, a * std::expm1(x / a)); };
    }));
YOLOC_REGISTER_OP(float_unary("HardSigmoid", "clamp(alpha * x + beta, 0, 1) (0.2, 0.5)",
                              [](const Node& n) {
                                const double a = attr(n, "alpha", 0.2f);
                                const double b = attr(n, "beta", 0.5f);
                                return [a, b](double x) {
                                  return std::max(0.0, std::min(1.0, a * x + b));
                                };
                              }));
YOLOC_REGISTER_OP(float_unary_fn("HardSwish", "x * clamp(x / 6 + 0.5, 0, 1)", [](double x) {
  return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
}));
YOLOC_REGISTER_OP(float_unary_fn("Softplus", "log(1 + e^x)", softplus));
YOLOC_REGISTER_OP(float_unary_fn("Softsign", "x / (1 + |x|)",
                                 [](double x) { return x / (1.0 + std::fabs(x)); }));
YOLOC_REGISTER_OP(float_unary_fn("Mish", "x * tanh(softplus(x))",
                                 [](double x) { return x * std::tanh(softplus(x)); }));
YOLOC_REGISTER_OP(float_unary("Swish", "x * sigmoid(alpha * x) (alpha 1: see SiLU)",
                              [](const Node& n) {
                                const double a = attr(n, "alpha", 1.0f);
                                return [a](double x) { return x * sigmoid(a * x); };
                              }));
YOLOC_REGISTER_OP(float_unary("ThresholdedRelu", "x > alpha ? x : 0 (alpha 1)",
                              [](const Node& n) {
                                const double a = attr(n, "alpha", 1.0f);
                                return [a](double x) { return x > a ? x : 0.0; };
                              }));
YOLOC_REGISTER_OP(gelu_def());
YOLOC_REGISTER_OP(prelu_def());
YOLOC_REGISTER_OP(clip_def());

}  // namespace yoloc
