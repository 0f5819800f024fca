// Quantisation: QuantizeLinear and DequantizeLinear (per tensor or per axis; 8- and 16-bit
// integers, int32 for dequantisation) and DynamicQuantizeLinear (float32 -> uint8 with computed
// scale and zero point). Arithmetic is done in float and rounds half to even, as ONNX specifies.
#include <cmath>
#include <limits>

#include "ops/op_common.h"

namespace yoloc {

namespace {

bool is_quant_type(DType t) {
  return t == DType::kUInt8 || t == DType::kInt8 || t == DType::kUInt16 || t == DType::kInt16;
}

/// Rounds half to even and saturates to T's range; NaN quantises to 0.
template <typename T>
T saturate_round(float v) {
  if (std::isnan(v)) return T(0);
  const float r = std::nearbyint(v);  // the default rounding mode is to nearest, ties to even
  const float lo = static_cast<float>(std::numeric_limits<T>::min());
  const float hi = static_cast<float>(std::numeric_limits<T>::max());
  return static_cast<T>(std::min(hi, std::max(lo, r)));
}

/// How a scale (and zero point) applies to x: one value, or one per index of `axis`.
struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero;  ///< same length as scale
  int64_t axis_size = 1;      ///< 1 for per-tensor
  int64_t inner = 1;          ///< elements after `axis` (stride of the axis)
};

QuantParams quant_params(const Node& n, const Tensor& x, const Tensor& scale, const Tensor& zp) {
  if (n.attrs.get_int("block_size", 0) != 0)
    user_error("{}: blocked quantisation (block_size {}) is not supported", n.label(),
               n.attrs.get_int("block_size", 0));
  QuantParams q;
  if (!is_float(scale.dtype()))
    user_error("{}: the scale must be a float tensor, got {}", n.label(), describe(scale));
  for (double s : scale.to_doubles()) q.scale.push_back(static_cast<float>(s));
  if (scale.rank() > 1 || (scale.rank() == 1 && scale.numel() != 1)) {
    const int64_t axis = normalize_axis(n.attrs.get_int("axis", 1), x.rank(), n);
    if (scale.rank() != 1 || scale.dim(0) != x.dim(axis))
      user_error("{}: a per-axis scale must be 1-D with {} elements (X {} on axis {}), got {}",
                 n.label(), x.dim(axis), describe(x), axis, describe(scale));
    q.axis_size = x.dim(axis);
    for (int64_t i = axis + 1; i < x.rank(); ++i) q.inner *= x.dim(i);
  }
  if (zp.defined()) {
    q.zero = zp.to_int64s();
    if (q.zero.size() != q.scale.size())
      user_error("{}: the zero point {} must have the scale's shape {}", n.label(), describe(zp),
                 describe(scale));
  } else {
    q.zero.assign(q.scale.size(), 0);
  }
  return q;
}

/// Index into QuantParams' vectors for flat element i of x.
inline size_t param_index(const QuantParams& q, int64_t i) {
  return q.axis_size == 1 ? 0 : static_cast<size_t>((i / q.inner) % q.axis_size);
}

void check_scale_shape(const InferContext& ctx) {
  const TensorType& s = ctx.type(1);
  if (s.has_rank && s.rank() > 1)
    ctx.fail("the scale must be a scalar or 1-D (per axis), got {}", s.str());
  if (ctx.has_input(2) && s.has_rank && ctx.type(2).has_rank && ctx.type(2).rank() != s.rank())
    ctx.fail("the zero point {} must have the scale's shape {}", ctx.type(2).str(), s.str());
}

std::vector<TensorType> infer_quantize(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  if (!is_float(x.dtype) && x.dtype != DType::kInt32)
    ctx.fail("x must be a float or int32 tensor, got {}", x.str());
  check_scale_shape(ctx);
  const DType out = ctx.has_input(2) ? ctx.type(2).dtype : DType::kUInt8;
  if (!is_quant_type(out))
    ctx.fail("the zero point must be uint8, int8, uint16 or int16, got {}", ctx.type(2).str());
  TensorType t = x;
  t.dtype = out;
  return {t};
}

std::vector<Tensor> quantize_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& zp = in.size() > 2 ? in[2] : Tensor();
  const QuantParams q = quant_params(n, x, in[1], zp);
  const DType out = zp.defined() ? zp.dtype() : DType::kUInt8;
  if (!is_quant_type(out))
    user_error("{}: the zero point must be uint8, int8, uint16 or int16, got {}", n.label(),
               describe(zp));
  const std::vector<double> xv = x.to_doubles();
  Tensor y(out, x.shape());
  dispatch_numeric(
      out,
      [&](auto tag) {
        using Q = typename decltype(tag)::type;
        Q* yp = y.data<Q>();
        for (int64_t i = 0; i < x.numel(); ++i) {
          const size_t k = param_index(q, i);
          // Round x / scale first, then add the zero point: both steps in float, as ONNX does.
          const float r = std::nearbyint(static_cast<float>(xv[i]) / q.scale[k]);
          yp[i] = saturate_round<Q>(r + static_cast<float>(q.zero[k]));
        }
      },
      n.label());
  return {y};
}

std::vector<TensorType> infer_dequantize(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  if (!is_quant_type(x.dtype) && x.dtype != DType::kInt32)
    ctx.fail("x must be uint8, int8, uint16, int16 or int32, got {}", x.str());
  if (!is_float(ctx.type(1).dtype))
    ctx.fail("the scale must be a float tensor, got {}", ctx.type(1).str());
  if (ctx.has_input(2) && ctx.type(2).dtype != x.dtype)
    ctx.fail("the zero point {} must have x's type {}", ctx.type(2).str(), x.str());
  check_scale_shape(ctx);
  TensorType t = x;
  t.dtype = ctx.type(1).dtype;
  return {t};
}

std::vector<Tensor> dequantize_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& zp = in.size() > 2 ? in[2] : Tensor();
  const QuantParams q = quant_params(n, x, in[1], zp);
  const std::vector<int64_t> xv = x.to_int64s();
  Tensor y(in[1].dtype(), x.shape());
  dispatch_float(
      y.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* yp = y.data<T>();
        for (int64_t i = 0; i < x.numel(); ++i) {
          const size_t k = param_index(q, i);
          yp[i] = static_cast<T>(static_cast<float>(xv[i] - q.zero[k]) * q.scale[k]);
        }
      },
      n.label());
  return {y};
}

std::vector<Tensor> dynamic_quantize_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  if (x.dtype() != DType::kFloat32)
    user_error("{}: x must be float32, got {}", n.label(), describe(x));
  const float* xp = x.data<float>();
  // The range always includes 0 so that 0 is exactly representable; NaNs are ignored.
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (xp[i] < lo) lo = xp[i];
    if (xp[i] > hi) hi = xp[i];
  }
  constexpr float kQMin = 0.0f, kQMax = 255.0f;
  // An all-zero input gets scale 1 (ONNX Runtime's choice; the spec leaves it undefined).
  const float scale = hi == lo ? 1.0f : (hi - lo) / (kQMax - kQMin);
  const float zp_float = std::nearbyint(std::min(kQMax, std::max(kQMin, kQMin - lo / scale)));
  Tensor y(DType::kUInt8, x.shape());
  uint8_t* yp = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i)
    yp[i] = saturate_round<uint8_t>(std::nearbyint(xp[i] / scale) + zp_float);
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp_float))};
}

OpDef quantize_def() {
  OpDef d;
  d.name = "QuantizeLinear";
  d.traits = kTraitQuant;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.doc = "saturate(round_half_even(x / scale) + zero_point), per tensor or per axis";
  d.infer = infer_quantize;
  d.reference = quantize_reference;
  return d;
}

OpDef dequantize_def() {
  OpDef d;
  d.name = "DequantizeLinear";
  d.traits = kTraitQuant;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.doc = "(x - zero_point) * scale, per tensor or per axis";
  d.infer = infer_dequantize;
  d.reference = dequantize_reference;
  return d;
}

OpDef dynamic_quantize_def() {
  OpDef d;
  d.name = "DynamicQuantizeLinear";
  d.traits = kTraitQuant;
  d.max_outputs = 3;
  d.doc = "float32 -> uint8 with scale and zero point computed from the data's range";
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.type(0);
    if (x.dtype != DType::kFloat32) ctx.fail("x must be float32, got {}", x.str());
    TensorType y = x;
    y.dtype = DType::kUInt8;
    return std::vector<TensorType>{y, TensorType(DType::kFloat32, {}),
                                   TensorType(DType::kUInt8, {})};
  };
  d.reference = dynamic_quantize_reference;
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(quantize_def());
YOLOC_REGISTER_OP(dequantize_def());
YOLOC_REGISTER_OP(dynamic_quantize_def());

}  // namespace yoloc
