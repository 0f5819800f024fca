#include "ops/op_common.h"

#include <algorithm>

namespace yoloc {

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n) {
  return normalize_axis_upto(axis, rank, std::max<int64_t>(rank, 1) - 1, n);
}

int64_t normalize_axis_upto(int64_t axis, int64_t rank, int64_t max_axis, const Node& n) {
  if (axis < -rank || axis > max_axis)
    user_error("{}: axis {} is out of range for rank {} (expected {}..{})", n.label(), axis, rank,
               -rank, max_axis);
  return axis < 0 ? axis + rank : axis;
}

std::vector<Dim> broadcast_dims(const std::vector<const TensorType*>& types, const Node& n) {
  int64_t rank = 0;
  for (const TensorType* t : types) rank = std::max(rank, t->rank());
  std::vector<Dim> out(static_cast<size_t>(rank), Dim(1));
  for (const TensorType* t : types) {
    const int64_t off = rank - t->rank();
    for (int64_t i = 0; i < t->rank(); ++i) {
      const Dim& d = t->dims[static_cast<size_t>(i)];
      Dim& o = out[static_cast<size_t>(off + i)];
      if (d.known() && d.value == 1) continue;
      if (o.known() && o.value == 1) {
        o = d;
      } else if (d.known() && o.known() && d.value != o.value) {
        user_error("{}: cannot broadcast shapes: dimension {} is {} in one input and {} in another",
                   n.label(), off + i, o.value, d.value);
      } else if (!d.known() && o.known()) {
        // keep the known one: the unknown must equal it (or be 1)
      } else if (d.known() && !o.known()) {
        o = d;
      } else if (!(d == o)) {
        o = Dim();
      }
    }
  }
  return out;
}

Shape broadcast_shape(const std::vector<Shape>& shapes, const Node& n) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[off + i];
      if (s[i] == 1) continue;
      if (o == 1) {
        o = s[i];
      } else if (o != s[i]) {
        user_error("{}: cannot broadcast shapes: dimension {} is {} in one input and {} in another",
                   n.label(), off + i, o, s[i]);
      }
    }
  }
  return out;
}

void for_each_broadcast(const Shape& out, const std::vector<Shape>& ins,
                        const std::function<void(int64_t, const int64_t*)>& f) {
  const size_t rank = out.size();
  const size_t k = ins.size();
  // Per input: stride in the input for each output dim (0 where broadcast).
  std::vector<std::vector<int64_t>> st(k, std::vector<int64_t>(rank, 0));
  for (size_t j = 0; j < k; ++j) {
    const Shape& s = ins[j];
    const Shape ss = shape_strides(s);
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) st[j][off + i] = s[i] == 1 ? 0 : ss[i];
  }
  const int64_t total = shape_numel(out);
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0), offs(k, 0);
  const int64_t inner = rank ? out[rank - 1] : 1;
  for (int64_t o = 0; o < total;) {
    // Run along the innermost dimension.
    for (int64_t x = 0; x < inner; ++x, ++o) {
      f(o, offs.data());
      if (rank)
        for (size_t j = 0; j < k; ++j) offs[j] += st[j][rank - 1];
    }
    if (rank == 0) break;
    for (size_t j = 0; j < k; ++j) offs[j] -= st[j][rank - 1] * inner;
    // Carry into the outer dimensions.
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      for (size_t j = 0; j < k; ++j) offs[j] += st[j][d];
      if (idx[d] < out[d]) break;
      for (size_t j = 0; j < k; ++j) offs[j] -= st[j][d] * out[d];
      idx[d] = 0;
    }
  }
}

namespace {

template <typename T>
void strided_kernel(const T* src, T* dst, const Shape& out, const std::vector<int64_t>& strides,
                    int64_t offset) {
  const size_t rank = out.size();
  const int64_t total = shape_numel(out);
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[offset];
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  const int64_t inner = out[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  int64_t base = offset;
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t x = 0; x < inner; ++x) dst[o + x] = src[base + x * inner_stride];
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      base += strides[d];
      if (idx[d] < out[d]) break;
      base -= strides[d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

Tensor copy_strided(const Tensor& in, const Shape& out_shape, const std::vector<int64_t>& strides,
                    int64_t offset) {
  YOLOC_CHECK(strides.size() == out_shape.size(), "copy_strided: {} strides for rank {}",
              strides.size(), out_shape.size());
  Tensor out(in.dtype(), out_shape);
  // Data movement does not look at values: copy elements as same-sized unsigned integers.
  switch (dtype_size(in.dtype())) {
    case 1:
      strided_kernel(static_cast<const uint8_t*>(in.raw()), static_cast<uint8_t*>(out.raw()),
                     out_shape, strides, offset);
      break;
    case 2:
      strided_kernel(static_cast<const uint16_t*>(in.raw()), static_cast<uint16_t*>(out.raw()),
                     out_shape, strides, offset);
      break;
    case 4:
      strided_kernel(static_cast<const uint32_t*>(in.raw()), static_cast<uint32_t*>(out.raw()),
                     out_shape, strides, offset);
      break;
    case 8:
      strided_kernel(static_cast<const uint64_t*>(in.raw()), static_cast<uint64_t*>(out.raw()),
                     out_shape, strides, offset);
      break;
    default: internal_error("copy_strided: element size {}", dtype_size(in.dtype()));
  }
  return out;
}

Dim sym_to_dim(const SymElem& e) {
  if (e.value) return *e.value >= 0 ? Dim(*e.value) : Dim();
  return e.symbol.empty() ? Dim() : Dim::sym(e.symbol);
}

SymElem dim_to_sym(const Dim& d) {
  if (d.known()) return {d.value, {}};
  return {std::nullopt, d.symbol};
}

std::vector<TensorType> infer_same_as_input0(const InferContext& ctx) { return {ctx.type(0)}; }

const Tensor& require_constant(const InferContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.value(i);
  if (!t)
    ctx.fail(
        "{} (input {}) must be a constant known at compile time; this graph computes it at "
        "run time, which yoloc does not support for this op",
        what, i);
  return *t;
}

std::vector<SliceAxis> slice_axes(const Node& n, const Shape& shape, const Tensor& starts,
                                  const Tensor& ends, const Tensor* axes_t, const Tensor* steps_t) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t> st = starts.to_int64s(), en = ends.to_int64s();
  std::vector<int64_t> axes, steps;
  if (axes_t) {
    axes = axes_t->to_int64s();
  } else {
    for (size_t i = 0; i < st.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps_t)
    steps = steps_t->to_int64s();
  else
    steps.assign(st.size(), 1);
  if (en.size() != st.size() || axes.size() != st.size() || steps.size() != st.size())
    user_error("{}: starts, ends, axes and steps must have one length, got {}, {}, {} and {}",
               n.label(), st.size(), en.size(), axes.size(), steps.size());
  if (rank == 0 && !st.empty()) user_error("{}: a scalar has no axis to slice", n.label());
  std::vector<SliceAxis> r;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < st.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], rank, n);
    if (seen[static_cast<size_t>(a)]) user_error("{}: axis {} is sliced twice", n.label(), a);
    seen[static_cast<size_t>(a)] = true;
    const int64_t step = steps[i];
    if (step == 0) user_error("{}: steps must not be 0", n.label());
    const int64_t dim = shape[static_cast<size_t>(a)];
    if (dim < 0) {
      r.push_back({a, 0, step, -1});
      continue;
    }
    int64_t s = st[i], e = en[i];
    // Adding dim >= 0 to a negative value cannot overflow (INT64_MIN ends stay negative).
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    // |step| without overflow (INT64_MIN's magnitude saturates: any step past the dim takes one).
    const int64_t mag = step > 0 ? step : step == INT64_MIN ? INT64_MAX : -step;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s - 1) / mag + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e - 1) / mag + 1 : 0;
    }
    r.push_back({a, s, step, count});
  }
  return r;
}

}  // namespace yoloc
