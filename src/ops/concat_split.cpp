// Ops that join, cut and repeat tensors: Concat, Split, Slice, Tile.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/checked.h"
#include "ops/op_common.h"

namespace yoloc {

namespace {

/// Merges dims that must be equal: a known one wins (conflicting known dims are an error), then
/// an agreed symbol, else unknown.
Dim merge_equal_dims(const std::vector<Dim>& dims, const InferContext& ctx, int64_t axis) {
  Dim known, sym = dims.empty() ? Dim() : dims[0];
  for (const Dim& d : dims) {
    if (d.known()) {
      if (known.known() && known.value != d.value)
        ctx.fail("inputs differ in dim {} ({} vs {}); only the concat axis may differ", axis,
                 known.value, d.value);
      known = d;
    }
    if (!(d == sym)) sym = Dim();
  }
  return known.known() ? known : sym;
}

OpDef make_concat() {
  OpDef d;
  d.name = "Concat";
  d.traits = kTraitInjective;
  d.max_inputs = 1 << 16;
  d.doc = "joins the inputs along axis";
  d.infer = [](const InferContext& ctx) {
    const DType dt = ctx.type(0).dtype;
    int64_t rank = -1;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const TensorType& t = ctx.type(i);
      if (!ctx.has_input(i)) ctx.fail("input {} is omitted", i);
      if (t.dtype != dt)
        ctx.fail("inputs must have one type, got {} and {}", ctx.type(0).str(), t.str());
      if (!t.has_rank) continue;
      if (rank >= 0 && t.rank() != rank)
        ctx.fail("inputs must have one rank, got {} and {}", rank, t.rank());
      rank = t.rank();
    }
    if (rank < 0) return std::vector<TensorType>{TensorType::unranked(dt)};
    const int64_t axis = normalize_axis(ctx.attrs().get_int("axis"), rank, ctx.node);
    std::vector<Dim> out;
    for (int64_t k = 0; k < rank; ++k) {
      std::vector<Dim> dims;
      for (size_t i = 0; i < ctx.num_inputs(); ++i)
        dims.push_back(ctx.type(i).has_rank ? ctx.type(i).dims[static_cast<size_t>(k)] : Dim());
      if (k != axis) {
        out.push_back(merge_equal_dims(dims, ctx, k));
        continue;
      }
      int64_t sum = 0;
      for (const Dim& dim : dims) sum = (sum >= 0 && dim.known()) ? sum + dim.value : -1;
      out.push_back(sum >= 0 ? Dim(sum) : Dim());
    }
    return std::vector<TensorType>{TensorType(dt, out)};
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    std::vector<SymElem> r;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (ctx.type(i).rank() != 1) return std::nullopt;
      const auto e = ctx.symbolic(i);
      if (!e) return std::nullopt;
      r.insert(r.end(), e->begin(), e->end());
    }
    return r;
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& first = in[0];
    const int64_t axis = normalize_axis(n.attrs.get_int("axis"), first.rank(), n);
    Shape out_shape = first.shape();
    out_shape[static_cast<size_t>(axis)] = 0;
    for (const Tensor& t : in) {
      bool ok = t.dtype() == first.dtype() && t.rank() == first.rank();
      for (int64_t k = 0; ok && k < t.rank(); ++k) ok = k == axis || t.dim(k) == first.dim(k);
      if (!ok)
        user_error("{}: cannot concatenate {} and {} along axis {}", n.label(), describe(first),
                   describe(t), axis);
      out_shape[static_cast<size_t>(axis)] += t.dim(axis);
    }
    Tensor out(first.dtype(), out_shape);
    const size_t es = dtype_size(first.dtype());
    const int64_t outer = shape_numel(Shape(out_shape.begin(), out_shape.begin() + axis));
    const int64_t inner = shape_numel(Shape(out_shape.begin() + axis + 1, out_shape.end()));
    const size_t out_row = static_cast<size_t>(out_shape[static_cast<size_t>(axis)] * inner) * es;
    auto* dst = static_cast<uint8_t*>(out.raw());
    size_t col = 0;
    for (const Tensor& t : in) {
      const size_t row = static_cast<size_t>(t.dim(axis) * inner) * es;
      const auto* src = static_cast<const uint8_t*>(t.raw());
      if (row)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(dst + static_cast<size_t>(o) * out_row + col,
                      src + static_cast<size_t>(o) * row, row);
      col += row;
    }
    return std::vector<Tensor>{out};
  };
  return d;
}

/// The sizes of Split's outputs along a dim of size `dim`: the split input when given, else
/// num_outputs (or the output count) chunks of ceil(dim / n), the last one smaller.
std::vector<int64_t> split_sizes(const Node& n, const Tensor* split, int64_t dim) {
  const size_t outputs = n.outputs.size();
  if (split) {
    std::vector<int64_t> s = split->to_int64s();
    int64_t sum = 0;
    for (int64_t v : s) {
      if (v < 0)
        user_error("{}: split sizes must be >= 0, got [{}]", n.label(), fmt::join(s, ", "));
      sum = checked_add(sum, v, n.label() + ": the split sizes");
    }
    if (s.size() != outputs)
      user_error("{}: {} split sizes for {} outputs", n.label(), s.size(), outputs);
    if (dim >= 0 && sum != dim)
      user_error("{}: split sizes [{}] add up to {}, but the split dim is {}", n.label(),
                 fmt::join(s, ", "), sum, dim);
    return s;
  }
  const int64_t parts = n.attrs.get_int("num_outputs", static_cast<int64_t>(outputs));
  if (parts != static_cast<int64_t>(outputs) || parts <= 0)
    user_error("{}: num_outputs is {} but the node has {} outputs", n.label(), parts, outputs);
  if (dim < 0) return std::vector<int64_t>(outputs, -1);
  const int64_t chunk = (dim + parts - 1) / parts;
  const int64_t last = dim - chunk * (parts - 1);
  if (last < 0)
    user_error("{}: cannot split a dim of {} into {} parts of {} (the last would be {})", n.label(),
               dim, parts, chunk, last);
  std::vector<int64_t> s(outputs, chunk);
  s.back() = last;
  return s;
}

OpDef make_split() {
  OpDef d;
  d.name = "Split";
  d.traits = kTraitInjective;
  d.max_inputs = 2;
  d.max_outputs = 1 << 16;
  d.doc = "cuts the input along axis into parts (sizes from input 'split' or num_outputs)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    const size_t outputs = ctx.node.outputs.size();
    if (!t.has_rank) return std::vector<TensorType>(outputs, TensorType::unranked(t.dtype));
    if (t.rank() == 0) ctx.fail("a scalar has no axis to split");
    const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", 0), t.rank(), ctx.node);
    const Dim& dim = t.dims[static_cast<size_t>(axis)];
    const Tensor* split = ctx.value(1);
    std::vector<int64_t> sizes;
    if (ctx.has_input(1) && !split)
      sizes.assign(outputs, -1);
    else
      sizes = split_sizes(ctx.node, split, dim.known() ? dim.value : -1);
    std::vector<TensorType> r;
    for (int64_t s : sizes) {
      TensorType o = t;
      o.dims[static_cast<size_t>(axis)] = s >= 0 ? Dim(s) : Dim();
      r.push_back(o);
    }
    return r;
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const int64_t axis = normalize_axis(n.attrs.get_int("axis", 0), x.rank(), n);
    const std::vector<int64_t> sizes =
        split_sizes(n, in.size() > 1 && in[1].defined() ? &in[1] : nullptr, x.dim(axis));
    const Shape strides = shape_strides(x.shape());
    std::vector<Tensor> outs;
    int64_t begin = 0;
    for (int64_t s : sizes) {
      Shape shape = x.shape();
      shape[static_cast<size_t>(axis)] = s;
      outs.push_back(copy_strided(x, shape, strides, begin * strides[static_cast<size_t>(axis)]));
      begin += s;
    }
    return outs;
  };
  return d;
}

OpDef make_slice() {
  OpDef d;
  d.name = "Slice";
  d.traits = kTraitInjective;
  d.min_inputs = 3;
  d.max_inputs = 5;
  d.doc = "data[starts:ends:steps] along axes (ONNX clamping rules)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return std::vector<TensorType>{t};
    const Tensor* starts = ctx.value(1);
    const Tensor* ends = ctx.value(2);
    const Tensor* axes = ctx.value(3);
    const Tensor* steps = ctx.value(4);
    std::vector<Dim> dims = t.dims;
    const bool known =
        starts && ends && (axes || !ctx.has_input(3)) && (steps || !ctx.has_input(4));
    if (!known) {
      if (axes) {
        for (int64_t a : axes->to_int64s())
          dims[static_cast<size_t>(normalize_axis(a, t.rank(), ctx.node))] = Dim();
      } else {
        dims.assign(dims.size(), Dim());
      }
      return std::vector<TensorType>{TensorType(t.dtype, dims)};
    }
    Shape shape;
    for (const Dim& dim : t.dims) shape.push_back(dim.known() ? dim.value : -1);
    const auto sl = slice_axes(ctx.node, shape, *starts, *ends, axes, steps);
    const std::vector<int64_t> st = starts->to_int64s(), en = ends->to_int64s();
    for (size_t i = 0; i < sl.size(); ++i) {
      Dim& dim = dims[static_cast<size_t>(sl[i].axis)];
      if (sl[i].count >= 0) {
        dim = Dim(sl[i].count);
      } else if (!(sl[i].step == 1 && st[i] == 0 && en[i] >= std::numeric_limits<int32_t>::max())) {
        dim = Dim();  // a slice of an unknown dim is unknown unless it takes the whole dim
      }
    }
    return std::vector<TensorType>{TensorType(t.dtype, dims)};
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    const auto elems = ctx.symbolic(0);
    const Tensor* starts = ctx.value(1);
    const Tensor* ends = ctx.value(2);
    if (!elems || ctx.type(0).rank() != 1 || !starts || !ends) return std::nullopt;
    if ((ctx.has_input(3) && !ctx.value(3)) || (ctx.has_input(4) && !ctx.value(4)))
      return std::nullopt;
    const auto sl = slice_axes(ctx.node, {static_cast<int64_t>(elems->size())}, *starts, *ends,
                               ctx.value(3), ctx.value(4));
    std::vector<SymElem> r;
    int64_t at = sl.empty() ? 0 : sl[0].start;
    const int64_t step = sl.empty() ? 1 : sl[0].step;
    const int64_t count = sl.empty() ? static_cast<int64_t>(elems->size()) : sl[0].count;
    for (int64_t i = 0; i < count; ++i, at += step) r.push_back((*elems)[static_cast<size_t>(at)]);
    return r;
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const auto sl =
        slice_axes(n, x.shape(), in[1], in[2], in.size() > 3 && in[3].defined() ? &in[3] : nullptr,
                   in.size() > 4 && in[4].defined() ? &in[4] : nullptr);
    const Shape xs = shape_strides(x.shape());
    Shape shape = x.shape();
    std::vector<int64_t> strides(xs.begin(), xs.end());
    int64_t offset = 0;
    for (const SliceAxis& s : sl) {
      const auto a = static_cast<size_t>(s.axis);
      shape[a] = s.count;
      strides[a] = xs[a] * s.step;
      if (s.count > 0) offset += s.start * xs[a];
    }
    return std::vector<Tensor>{copy_strided(x, shape, strides, offset)};
  };
  return d;
}

OpDef make_tile() {
  OpDef d;
  d.name = "Tile";
  d.traits = kTraitInjective;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "repeats the input repeats[i] times along dim i";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return std::vector<TensorType>{t};
    std::vector<Dim> dims(t.dims.size(), Dim());
    if (const Tensor* r = ctx.value(1)) {
      const std::vector<int64_t> reps = r->to_int64s();
      if (static_cast<int64_t>(reps.size()) != t.rank())
        ctx.fail("repeats has {} elements for an input of rank {}", reps.size(), t.rank());
      for (size_t i = 0; i < dims.size(); ++i) {
        if (reps[i] < 0) ctx.fail("repeats must be >= 0, got {}", reps[i]);
        if (reps[i] == 1)
          dims[i] = t.dims[i];
        else if (t.dims[i].known())
          dims[i] = Dim(checked_mul(t.dims[i].value, reps[i], ctx.node.label() + ": repeats"));
        else if (reps[i] == 0)
          dims[i] = Dim(0);
      }
    }
    return std::vector<TensorType>{TensorType(t.dtype, dims)};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const std::vector<int64_t> reps = in[1].to_int64s();
    if (static_cast<int64_t>(reps.size()) != x.rank())
      user_error("{}: repeats has {} elements for an input of rank {}", n.label(), reps.size(),
                 x.rank());
    // View the output as [r0, d0, r1, d1, ...] where the r axes have stride 0.
    const Shape xs = shape_strides(x.shape());
    Shape view, out;
    std::vector<int64_t> strides;
    for (size_t i = 0; i < reps.size(); ++i) {
      if (reps[i] < 0) user_error("{}: repeats must be >= 0, got {}", n.label(), reps[i]);
      view.insert(view.end(), {reps[i], x.shape()[i]});
      strides.insert(strides.end(), {0, xs[i]});
      out.push_back(checked_mul(reps[i], x.shape()[i], n.label() + ": repeats"));
    }
    return std::vector<Tensor>{copy_strided(x, view, strides).reshaped(out)};
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(make_concat());
YOLOC_REGISTER_OP(make_split());
YOLOC_REGISTER_OP(make_slice());
YOLOC_REGISTER_OP(make_tile());

}  // namespace yoloc
