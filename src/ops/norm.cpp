// Normalisations: BatchNormalization (inference with running statistics, or training mode with
// batch statistics), InstanceNormalization and LayerNormalization. Statistics are computed in
// double and each output is rounded once.
#include <cmath>

#include "ops/op_common.h"

namespace yoloc {

namespace {

/// Per-channel parameters of a normalisation, checked to have `c` elements.
std::vector<double> channel_param(const Node& n, const Tensor& t, int64_t c, const char* what) {
  if (t.rank() != 1 || t.dim(0) != c)
    user_error("{}: {} must be a 1-D tensor of {} elements (one per channel), got {}", n.label(),
               what, c, describe(t));
  if (!is_float(t.dtype()))
    user_error("{}: {} must be a float tensor, got {}", n.label(), what, describe(t));
  return t.to_doubles();
}

/// Writes the float tensor t from doubles, rounding once.
Tensor from_doubles(DType dt, const Shape& shape, const std::vector<double>& v,
                    const std::string& what) {
  Tensor t(dt, shape);
  dispatch_float(
      dt,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.data<T>();
        for (size_t i = 0; i < v.size(); ++i) {
          if constexpr (std::is_same_v<T, double>)
            p[i] = v[i];
          else
            p[i] = static_cast<T>(static_cast<float>(v[i]));
        }
      },
      what);
  return t;
}

void check_float_input(const InferContext& ctx, size_t i, const char* what) {
  if (ctx.has_input(i) && !is_float(ctx.type(i).dtype))
    ctx.fail("{} (input {}) must be a float tensor, got {}", what, i, ctx.type(i).str());
}

std::vector<TensorType> infer_channel_norm(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  check_float_input(ctx, 0, "X");
  if (x.has_rank && x.rank() < 2) ctx.fail("X must have rank >= 2 (N, C, ...), got {}", x.str());
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    check_float_input(ctx, i, "a per-channel parameter");
    const TensorType& p = ctx.type(i);
    if (p.has_rank && p.rank() != 1)
      ctx.fail("input {} must be 1-D (one value per channel), got {}", i, p.str());
    if (p.has_rank && x.has_rank && p.dims[0].known() && x.dims[1].known() &&
        p.dims[0].value != x.dims[1].value)
      ctx.fail("input {} {} must have one value per channel of X {}", i, p.str(), x.str());
  }
  std::vector<TensorType> out{x};
  // Training-mode outputs: updated running mean and variance, shaped like input_mean/var.
  if (ctx.num_inputs() > 4) {
    out.push_back(ctx.type(3));
    out.push_back(ctx.type(4));
  }
  return out;
}

std::vector<Tensor> batch_norm_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  if (x.rank() < 2)
    user_error("{}: X must have rank >= 2 (N, C, ...), got {}", n.label(), describe(x));
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t inner = N * C != 0 ? x.numel() / (N * C) : 0;
  const std::vector<double> scale = channel_param(n, in[1], C, "scale");
  const std::vector<double> bias = channel_param(n, in[2], C, "B");
  std::vector<double> mean = channel_param(n, in[3], C, "input_mean");
  std::vector<double> var = channel_param(n, in[4], C, "input_var");
  const double eps = n.attrs.get_float("epsilon", 1e-5f);
  const bool training = n.attrs.get_int("training_mode", 0) != 0;
  const std::vector<double> xv = x.to_doubles();
  std::vector<Tensor> out;
  if (training) {
    // Batch statistics (population variance) replace the running ones, which are updated.
    const double momentum = n.attrs.get_float("momentum", 0.9f);
    const double count = static_cast<double>(N * inner);
    std::vector<double> run_mean(C), run_var(C);
    for (int64_t c = 0; c < C; ++c) {
      double s = 0, s2 = 0;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t i = 0; i < inner; ++i) s += xv[(b * C + c) * inner + i];
      const double m = count > 0 ? s / count : 0;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = xv[(b * C + c) * inner + i] - m;
          s2 += d * d;
        }
      const double v = count > 0 ? s2 / count : 0;
      run_mean[c] = mean[c] * momentum + m * (1 - momentum);
      run_var[c] = var[c] * momentum + v * (1 - momentum);
      mean[c] = m;
      var[c] = v;
    }
    out.push_back(Tensor());
    out.push_back(from_doubles(in[3].dtype(), in[3].shape(), run_mean, n.label()));
    out.push_back(from_doubles(in[4].dtype(), in[4].shape(), run_var, n.label()));
  } else {
    out.push_back(Tensor());
  }
  std::vector<double> y(xv.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const double k = scale[c] / std::sqrt(var[c] + eps);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (b * C + c) * inner + i;
        y[at] = (xv[at] - mean[c]) * k + bias[c];
      }
    }
  out[0] = from_doubles(x.dtype(), x.shape(), y, n.label());
  out.resize(n.outputs.size());
  return out;
}

OpDef batch_norm_def() {
  OpDef d;
  d.name = "BatchNormalization";
  d.traits = kTraitLayoutSensitive;
  d.min_inputs = d.max_inputs = 5;
  d.max_outputs = 3;
  d.doc = "(x - mean) / sqrt(var + epsilon) * scale + B per channel (axis 1)";
  d.infer = [](const InferContext& ctx) {
    const bool training = ctx.attrs().get_int("training_mode", 0) != 0;
    if (!training && ctx.node.outputs.size() > 1)
      ctx.fail("outputs running_mean and running_var exist only with training_mode=1");
    std::vector<TensorType> t = infer_channel_norm(ctx);
    return t;
  };
  d.reference = batch_norm_reference;
  return d;
}

std::vector<Tensor> instance_norm_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  if (x.rank() < 3)
    user_error("{}: X must have rank >= 3 (N, C, spatial...), got {}", n.label(), describe(x));
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t inner = N * C != 0 ? x.numel() / (N * C) : 0;
  const std::vector<double> scale = channel_param(n, in[1], C, "scale");
  const std::vector<double> bias = channel_param(n, in[2], C, "B");
  const double eps = n.attrs.get_float("epsilon", 1e-5f);
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> y(xv.size());
  for (int64_t p = 0; p < N * C; ++p) {
    const int64_t c = p % C;
    const double* xp = xv.data() + p * inner;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < inner; ++i) s += xp[i];
    const double m = s / static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) s2 += (xp[i] - m) * (xp[i] - m);
    const double k = scale[c] / std::sqrt(s2 / static_cast<double>(inner) + eps);
    for (int64_t i = 0; i < inner; ++i) y[p * inner + i] = (xp[i] - m) * k + bias[c];
  }
  return {from_doubles(x.dtype(), x.shape(), y, n.label())};
}

OpDef instance_norm_def() {
  OpDef d;
  d.name = "InstanceNormalization";
  d.traits = kTraitLayoutSensitive;
  d.min_inputs = d.max_inputs = 3;
  d.doc = "normalises each (n, c) plane over its spatial axes, then scale and B per channel";
  d.infer = infer_channel_norm;
  d.reference = instance_norm_reference;
  return d;
}

/// Shape of LayerNormalization's Mean and InvStdDev: X's dims before `axis`, then ones.
template <typename D>
std::vector<D> stat_dims(const std::vector<D>& x, int64_t axis) {
  std::vector<D> d(x.begin(), x.begin() + axis);
  d.resize(x.size(), D(1));
  return d;
}

std::vector<TensorType> infer_layer_norm(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  check_float_input(ctx, 0, "X");
  check_float_input(ctx, 1, "Scale");
  check_float_input(ctx, 2, "B");
  if (!x.has_rank)
    return {x, TensorType::unranked(DType::kFloat32), TensorType::unranked(DType::kFloat32)};
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", -1), x.rank(), ctx.node);
  const std::vector<Dim> s = stat_dims(x.dims, axis);
  return {x, TensorType(DType::kFloat32, s), TensorType(DType::kFloat32, s)};
}

std::vector<Tensor> layer_norm_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const int64_t axis = normalize_axis(n.attrs.get_int("axis", -1), x.rank(), n);
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t cols = shape_numel(norm_shape);
  const int64_t rows = cols ? x.numel() / cols : 0;
  // Scale and B broadcast (unidirectionally) to the normalised dims.
  auto expand = [&](const Tensor& t, double dflt) {
    std::vector<double> v(static_cast<size_t>(cols), dflt);
    if (!t.defined()) return v;
    if (broadcast_shape({norm_shape, t.shape()}, n) != norm_shape)
      user_error("{}: {} does not broadcast to the normalised dims {}", n.label(), describe(t),
                 shape_str(norm_shape));
    const std::vector<double> tv = t.to_doubles();
    for_each_broadcast(norm_shape, {t.shape()},
                       [&](int64_t o, const int64_t* off) { v[o] = tv[off[0]]; });
    return v;
  };
  const std::vector<double> scale = expand(in[1], 1.0);
  const std::vector<double> bias = expand(in.size() > 2 ? in[2] : Tensor(), 0.0);
  const double eps = n.attrs.get_float("epsilon", 1e-5f);
  const std::vector<double> xv = x.to_doubles();
  std::vector<double> y(xv.size()), mean(rows), inv_std(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xp = xv.data() + r * cols;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < cols; ++i) s += xp[i];
    const double m = s / static_cast<double>(cols);
    for (int64_t i = 0; i < cols; ++i) s2 += (xp[i] - m) * (xp[i] - m);
    const double inv = 1.0 / std::sqrt(s2 / static_cast<double>(cols) + eps);
    for (int64_t i = 0; i < cols; ++i) y[r * cols + i] = (xp[i] - m) * inv * scale[i] + bias[i];
    mean[r] = m;
    inv_std[r] = inv;
  }
  const Shape s = stat_dims(x.shape(), axis);
  std::vector<Tensor> out{from_doubles(x.dtype(), x.shape(), y, n.label()),
                          from_doubles(DType::kFloat32, s, mean, n.label()),
                          from_doubles(DType::kFloat32, s, inv_std, n.label())};
  out.resize(n.outputs.size());
  return out;
}

OpDef layer_norm_def() {
  OpDef d;
  d.name = "LayerNormalization";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.max_outputs = 3;
  d.doc = "normalises over the axes from `axis` on, then Scale and B; optional Mean, InvStdDev";
  d.infer = infer_layer_norm;
  d.reference = layer_norm_reference;
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(batch_norm_def());
YOLOC_REGISTER_OP(instance_norm_def());
YOLOC_REGISTER_OP(layer_norm_def());

}  // namespace yoloc
