// Pad: constant, reflect, edge and wrap padding of selected axes (negative pads crop).
#include <fmt/ranges.h>

#include "ops/op_common.h"

namespace yoloc {

namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

PadMode pad_mode(const Node& n) {
  const std::string m = n.attrs.get_string("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  user_error("{}: mode '{}' is not one of constant, reflect, edge, wrap", n.label(), m);
}

/// Begin and end pads of every axis of a rank-`rank` tensor, from the pads input and the
/// optional axes input.
std::vector<int64_t> full_pads(const Node& n, const Tensor& pads, const Tensor* axes,
                               int64_t rank) {
  std::vector<int64_t> ax;
  if (axes && axes->defined()) {
    for (int64_t a : axes->to_int64s()) ax.push_back(normalize_axis(a, rank, n));
  } else {
    for (int64_t a = 0; a < rank; ++a) ax.push_back(a);
  }
  const std::vector<int64_t> p = pads.to_int64s();
  if (p.size() != 2 * ax.size())
    user_error("{}: pads has {} values [{}], expected {} (begins then ends of {} axes)", n.label(),
               p.size(), fmt::join(p, ", "), 2 * ax.size(), ax.size());
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  const size_t k = ax.size();
  for (size_t i = 0; i < k; ++i) {
    full[ax[i]] = p[i];
    full[rank + ax[i]] = p[k + i];
  }
  return full;
}

std::vector<TensorType> infer_pad(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  if (ctx.type(1).dtype != DType::kInt64) ctx.fail("pads must be int64, got {}", ctx.type(1).str());
  if (ctx.has_input(2) && ctx.type(2).dtype != x.dtype)
    ctx.fail("constant_value {} must have the data's type {}", ctx.type(2).str(), x.str());
  pad_mode(ctx.node);
  if (!x.has_rank) return {x};
  const Tensor* pads = ctx.value(1);
  const Tensor* axes = ctx.has_input(3) ? ctx.value(3) : nullptr;
  if (!pads || (ctx.has_input(3) && !axes))
    return {TensorType(x.dtype, std::vector<Dim>(x.dims.size()))};
  const std::vector<int64_t> p = full_pads(ctx.node, *pads, axes, x.rank());
  std::vector<Dim> dims = x.dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    const int64_t add = p[i] + p[x.rank() + i];
    if (add == 0) continue;
    if (!dims[i].known()) {
      dims[i] = Dim();
    } else if (dims[i].value + add < 0) {
      ctx.fail("pads crop axis {} of {} below zero", i, x.str());
    } else {
      dims[i] = Dim(dims[i].value + add);
    }
  }
  return {TensorType(x.dtype, dims)};
}

/// Input index along one axis of size `len` for output index `o` shifted by the begin pad, or -1
/// when the constant is taken.
int64_t source_index(int64_t i, int64_t len, PadMode mode) {
  if (i >= 0 && i < len) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : len - 1;
    case PadMode::kWrap:
      return ((i % len) + len) % len;
    case PadMode::kReflect: {
      if (len == 1) return 0;
      const int64_t period = 2 * (len - 1);
      int64_t r = ((i % period) + period) % period;
      return r < len ? r : period - r;
    }
  }
  return -1;
}

std::vector<Tensor> pad_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const PadMode mode = pad_mode(n);
  const Tensor* axes = in.size() > 3 ? &in[3] : nullptr;
  const std::vector<int64_t> p = full_pads(n, in[1], axes, x.rank());
  const int64_t r = x.rank();
  Shape out_shape = x.shape();
  for (int64_t i = 0; i < r; ++i) {
    out_shape[i] += p[i] + p[r + i];
    if (out_shape[i] < 0)
      user_error("{}: pads crop axis {} of {} below zero", n.label(), i, describe(x));
    if (x.dim(i) == 0 && out_shape[i] > 0 && mode != PadMode::kConstant)
      user_error("{}: cannot pad the empty axis {} of {} in mode {}", n.label(), i, describe(x),
                 n.attrs.get_string("mode", "constant"));
  }
  // Per axis: the input offset (index * stride) of each output index, or -1 for the constant.
  const Shape strides = shape_strides(x.shape());
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(r));
  for (int64_t a = 0; a < r; ++a)
    for (int64_t o = 0; o < out_shape[a]; ++o) {
      const int64_t i = source_index(o - p[a], x.dim(a), mode);
      src[a].push_back(i < 0 ? -1 : i * strides[a]);
    }
  Tensor y(x.dtype(), out_shape);
  const Tensor& cv = in.size() > 2 ? in[2] : Tensor();
  if (cv.defined() && (cv.dtype() != x.dtype() || cv.numel() != 1))
    user_error("{}: constant_value must be one {} value, got {}", n.label(), dtype_name(x.dtype()),
               describe(cv));
  dispatch_all(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T value = cv.defined() ? cv.data<T>()[0] : T();
        const T* xp = x.data<T>();
        T* yp = y.data<T>();
        const int64_t total = y.numel();
        std::vector<int64_t> idx(static_cast<size_t>(r), 0);
        for (int64_t o = 0; o < total; ++o) {
          int64_t off = 0;
          bool constant = false;
          for (int64_t a = 0; a < r; ++a) {
            const int64_t s = src[a][idx[a]];
            constant = constant || s < 0;
            off += s;
          }
          yp[o] = constant ? value : xp[off];
          for (int64_t a = r - 1; a >= 0; --a) {
            if (++idx[a] < out_shape[a]) break;
            idx[a] = 0;
          }
        }
      },
      n.label());
  return {y};
}

OpDef pad_def() {
  OpDef d;
  d.name = "Pad";
  d.traits = kTraitInjective;
  d.min_inputs = 2;
  d.max_inputs = 4;
  d.doc = "pads (or crops, for negative pads) axes with a constant, reflection, edge or wrap";
  d.infer = infer_pad;
  d.reference = pad_reference;
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(pad_def());

}  // namespace yoloc
