// Pooling: MaxPool (with optional Indices), AveragePool, LpPool over 1-D to 3-D windows, and
// GlobalAveragePool / GlobalMaxPool over all spatial axes.
#include <cmath>
#include <limits>

#include "ops/nn_common.h"
#include "ops/op_common.h"

namespace yoloc {

namespace {

enum class PoolKind { kMax, kAverage, kLp };

std::vector<int64_t> pool_kernel(const Node& n, int64_t spatial) {
  if (!n.attrs.has("kernel_shape"))
    user_error("{}: the kernel_shape attribute is required", n.label());
  return ints_attr(n, "kernel_shape", static_cast<size_t>(spatial), 1);
}

void check_pool_dtype(const InferContext& ctx, PoolKind kind) {
  const DType t = ctx.type(0).dtype;
  const bool ok =
      is_float(t) || (kind == PoolKind::kMax && (t == DType::kInt8 || t == DType::kUInt8));
  if (!ok)
    ctx.fail("X must be a float tensor{}, got {}", kind == PoolKind::kMax ? " or int8/uint8" : "",
             ctx.type(0).str());
}

std::vector<TensorType> infer_pool(const InferContext& ctx, PoolKind kind) {
  check_pool_dtype(ctx, kind);
  const TensorType& x = ctx.type(0);
  if (!x.has_rank) return {TensorType::unranked(x.dtype), TensorType::unranked(DType::kInt64)};
  if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got {}", x.str());
  if (kind == PoolKind::kMax && ctx.attrs().get_int("storage_order", 0) > 1)
    ctx.fail("storage_order must be 0 (row major) or 1 (column major)");
  const std::vector<int64_t> kernel = pool_kernel(ctx.node, x.rank() - 2);
  std::vector<Dim> dims{x.dims[0], x.dims[1]};
  const std::vector<Dim> in(x.dims.begin() + 2, x.dims.end());
  for (const Dim& d : window_output_dims(window_params(ctx.node, kernel), in, ctx.node))
    dims.push_back(d);
  return {TensorType(x.dtype, dims), TensorType(DType::kInt64, dims)};
}

/// Pools one N*C stack of planes. For kMax, `indices` (if not null) receives the flat index of
/// each maximum in X, row-major or (column_major) with the spatial axes reversed.
template <typename T>
void pool_planes(const Geometry3& g, int64_t planes, PoolKind kind, bool count_include_pad,
                 double p, const T* x, T* y, int64_t* indices, bool column_major) {
  const int64_t isz = g.in_size(), osz = g.out_size();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * isz;
    int64_t o = pl * osz;
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++o) {
          const int64_t st[3] = {o0 * g.s[0] - g.pb[0], o1 * g.s[1] - g.pb[1],
                                 o2 * g.s[2] - g.pb[2]};
          double best = -std::numeric_limits<double>::infinity();
          int64_t best_at = -1;
          double sum = 0;
          int64_t valid = 0, in_padded = 0;
          for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
            for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
              for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                const int64_t i[3] = {st[0] + k0 * g.d[0], st[1] + k1 * g.d[1],
                                      st[2] + k2 * g.d[2]};
                bool inside = true, inside_padded = true;
                for (int a = 0; a < 3; ++a) {
                  inside = inside && i[a] >= 0 && i[a] < g.in[a];
                  inside_padded = inside_padded && i[a] >= -g.pb[a] && i[a] < g.in[a] + g.pe[a];
                }
                in_padded += inside_padded;
                if (!inside) continue;
                ++valid;
                const double v = static_cast<double>(xp[(i[0] * g.in[1] + i[1]) * g.in[2] + i[2]]);
                if (kind == PoolKind::kMax) {
                  if (v > best || best_at < 0) {
                    best = v;
                    best_at = column_major ? (i[2] * g.in[1] + i[1]) * g.in[0] + i[0]
                                           : (i[0] * g.in[1] + i[1]) * g.in[2] + i[2];
                  }
                } else if (kind == PoolKind::kAverage) {
                  sum += v;
                } else {
                  sum += std::pow(std::fabs(v), p);
                }
              }
          double r;
          if (kind == PoolKind::kMax) {
            if (best_at < 0)
              best = std::is_integral_v<T> ? static_cast<double>(std::numeric_limits<T>::lowest())
                                           : -std::numeric_limits<double>::infinity();
            r = best;
            if (indices) indices[o] = pl * isz + std::max<int64_t>(best_at, 0);
          } else if (kind == PoolKind::kAverage) {
            const int64_t count = count_include_pad ? in_padded : valid;
            r = count > 0 ? sum / static_cast<double>(count) : 0.0;
          } else {
            r = std::pow(sum, 1.0 / p);
          }
          if constexpr (std::is_same_v<T, double>)
            y[o] = r;
          else
            y[o] = static_cast<T>(static_cast<float>(r));
        }
  }
}

std::vector<Tensor> pool_reference(const Node& n, const std::vector<Tensor>& in, PoolKind kind) {
  const Tensor& x = in[0];
  if (x.rank() < 3)
    user_error("{}: X must have rank >= 3 (N, C, spatial...), got {}", n.label(), describe(x));
  const std::vector<int64_t> kernel = pool_kernel(n, x.rank() - 2);
  WindowParams p = window_params(n, kernel);
  const Shape in_sp(x.shape().begin() + 2, x.shape().end());
  Shape out_sp, out_shape{x.dim(0), x.dim(1)};
  for (int64_t i = 0; i < p.rank(); ++i) out_sp.push_back(window_output(p, i, in_sp[i], n));
  out_shape.insert(out_shape.end(), out_sp.begin(), out_sp.end());
  const Geometry3 g = make_geometry3(p, in_sp, out_sp, n);
  const bool want_indices = kind == PoolKind::kMax && n.outputs.size() > 1;
  Tensor y(x.dtype(), out_shape);
  Tensor idx = want_indices ? Tensor(DType::kInt64, out_shape) : Tensor();
  const double lp = static_cast<double>(n.attrs.get_int("p", 2));
  if (kind == PoolKind::kLp && lp <= 0) user_error("{}: p must be positive, got {}", n.label(), lp);
  const bool include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
  const bool column_major = n.attrs.get_int("storage_order", 0) == 1;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      user_error("{}: bool input is not supported", n.label());
    } else {
      pool_planes<T>(g, x.dim(0) * x.dim(1), kind, include_pad, lp, x.data<T>(), y.data<T>(),
                     want_indices ? idx.data<int64_t>() : nullptr, column_major);
    }
  };
  if (kind == PoolKind::kMax && !is_float(x.dtype()))
    dispatch_numeric(x.dtype(), run, n.label());
  else
    dispatch_float(x.dtype(), run, n.label());
  if (want_indices) return {y, idx};
  return {y};
}

OpDef pool_def(const char* name, PoolKind kind, const char* doc) {
  OpDef d;
  d.name = name;
  d.traits = kTraitAnchor | kTraitLayoutSensitive;
  d.max_outputs = kind == PoolKind::kMax ? 2 : 1;
  d.doc = doc;
  d.infer = [kind](const InferContext& ctx) { return infer_pool(ctx, kind); };
  d.reference = [kind](const Node& n, const std::vector<Tensor>& in) {
    return pool_reference(n, in, kind);
  };
  return d;
}

std::vector<Tensor> global_pool_reference(const Node& n, const std::vector<Tensor>& in, bool max) {
  const Tensor& x = in[0];
  if (x.rank() < 2)
    user_error("{}: X must have rank >= 2 (N, C, spatial...), got {}", n.label(), describe(x));
  Shape out_shape(x.shape().size(), 1);
  out_shape[0] = x.dim(0);
  out_shape[1] = x.dim(1);
  Tensor y(x.dtype(), out_shape);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes ? x.numel() / planes : 0;
  dispatch_float(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* xp = x.data<T>();
        T* yp = y.data<T>();
        for (int64_t pl = 0; pl < planes; ++pl) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t i = 0; i < size; ++i) {
            const double v = static_cast<double>(xp[pl * size + i]);
            acc = max ? std::max(acc, v) : acc + v;
          }
          if (!max) acc /= static_cast<double>(size);
          yp[pl] = static_cast<T>(acc);
        }
      },
      n.label());
  return {y};
}

OpDef global_pool_def(const char* name, bool max, const char* doc) {
  OpDef d;
  d.name = name;
  d.traits = kTraitAnchor | kTraitLayoutSensitive;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& x = ctx.type(0);
    if (!is_float(x.dtype)) ctx.fail("X must be a float tensor, got {}", x.str());
    if (!x.has_rank) return std::vector<TensorType>{x};
    if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N, C, spatial...), got {}", x.str());
    std::vector<Dim> dims(x.dims.size(), Dim(1));
    dims[0] = x.dims[0];
    dims[1] = x.dims[1];
    return std::vector<TensorType>{TensorType(x.dtype, dims)};
  };
  d.reference = [max](const Node& n, const std::vector<Tensor>& in) {
    return global_pool_reference(n, in, max);
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(pool_def("MaxPool", PoolKind::kMax,
                           "max over sliding windows, with optional argmax Indices"));
YOLOC_REGISTER_OP(pool_def("AveragePool", PoolKind::kAverage,
                           "mean over sliding windows (count_include_pad chooses the divisor)"));
YOLOC_REGISTER_OP(pool_def("LpPool", PoolKind::kLp, "p-norm over sliding windows"));
YOLOC_REGISTER_OP(global_pool_def("GlobalAveragePool", false, "mean over all spatial axes"));
YOLOC_REGISTER_OP(global_pool_def("GlobalMaxPool", true, "max over all spatial axes"));

}  // namespace yoloc
