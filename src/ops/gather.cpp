// Index-driven ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements, TopK, NonZero,
// Trilu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/op_common.h"

namespace yoloc {

namespace {

/// An index in [-dim, dim) made non-negative; anything else is a user error naming the node.
int64_t checked_index(int64_t i, int64_t dim, const Node& n) {
  if (i < -dim || i >= dim)
    user_error("{}: index {} is out of range for a dim of size {}", n.label(), i, dim);
  return i < 0 ? i + dim : i;
}

int64_t numel_of(const Shape& s, size_t begin, size_t end) {
  return shape_numel(
      Shape(s.begin() + static_cast<int64_t>(begin), s.begin() + static_cast<int64_t>(end)));
}

void check_indices_type(const InferContext& ctx, size_t i) {
  const DType t = ctx.type(i).dtype;
  if (t != DType::kInt32 && t != DType::kInt64)
    ctx.fail("indices must be int32 or int64, got {}", ctx.type(i).str());
}

OpDef make_gather() {
  OpDef d;
  d.name = "Gather";
  d.traits = kTraitInjective;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "picks slices of data along axis at the given indices (negative count from the end)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    const TensorType& idx = ctx.type(1);
    check_indices_type(ctx, 1);
    if (!t.has_rank || !idx.has_rank) return std::vector<TensorType>{TensorType::unranked(t.dtype)};
    if (t.rank() == 0) ctx.fail("data must have rank >= 1");
    const auto axis =
        static_cast<size_t>(normalize_axis(ctx.attrs().get_int("axis", 0), t.rank(), ctx.node));
    std::vector<Dim> dims(t.dims.begin(), t.dims.begin() + static_cast<int64_t>(axis));
    dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
    dims.insert(dims.end(), t.dims.begin() + static_cast<int64_t>(axis) + 1, t.dims.end());
    return std::vector<TensorType>{TensorType(t.dtype, dims)};
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    const auto elems = ctx.symbolic(0);
    const Tensor* idx = ctx.value(1);
    if (!elems || ctx.type(0).rank() != 1 || !idx || idx->rank() > 1) return std::nullopt;
    std::vector<SymElem> r;
    const auto size = static_cast<int64_t>(elems->size());
    for (int64_t i : idx->to_int64s())
      r.push_back((*elems)[static_cast<size_t>(checked_index(i, size, ctx.node))]);
    return r;
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.rank() == 0) user_error("{}: data must have rank >= 1", n.label());
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.get_int("axis", 0), x.rank(), n));
    const std::vector<int64_t> idx = in[1].to_int64s();
    Shape shape(x.shape().begin(), x.shape().begin() + static_cast<int64_t>(axis));
    shape.insert(shape.end(), in[1].shape().begin(), in[1].shape().end());
    shape.insert(shape.end(), x.shape().begin() + static_cast<int64_t>(axis) + 1, x.shape().end());
    Tensor out(x.dtype(), shape);
    const int64_t dim = x.shape()[axis];
    const int64_t outer = numel_of(x.shape(), 0, axis);
    const size_t block = static_cast<size_t>(numel_of(x.shape(), axis + 1, x.shape().size())) *
                         dtype_size(x.dtype());
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(out.raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx) {
        const int64_t j = checked_index(i, dim, n);
        std::memcpy(dst, src + static_cast<size_t>(o * dim + j) * block, block);
        dst += block;
      }
    return std::vector<Tensor>{out};
  };
  return d;
}

/// Calls f(flat_index, multi_index) for every element of a shape, row-major.
template <typename F>
void for_each_index(const Shape& s, F f) {
  const int64_t total = shape_numel(s);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    f(flat, idx);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

/// Checks that `idx` (GatherElements / ScatterElements indices) has data's rank and, outside the
/// axis, fits in data.
void check_elements_shapes(const Node& n, const Tensor& data, const Tensor& idx, size_t axis) {
  bool ok = idx.rank() == data.rank();
  for (size_t d = 0; ok && d < idx.shape().size(); ++d)
    ok = d == axis || idx.shape()[d] <= data.shape()[d];
  if (!ok)
    user_error("{}: indices {} do not fit data {}", n.label(), describe(idx), describe(data));
}

OpDef make_gather_elements() {
  OpDef d;
  d.name = "GatherElements";
  d.traits = kTraitInjective;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "out[i][j][k] = data[indices[i][j][k]][j][k] (for axis 0)";
  d.infer = [](const InferContext& ctx) {
    check_indices_type(ctx, 1);
    const TensorType& t = ctx.type(0);
    const TensorType& idx = ctx.type(1);
    if (t.has_rank && idx.has_rank && t.rank() != idx.rank())
      ctx.fail("data {} and indices {} must have one rank", t.str(), idx.str());
    TensorType out = idx;
    out.dtype = t.dtype;
    return std::vector<TensorType>{out};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.get_int("axis", 0), x.rank(), n));
    check_elements_shapes(n, x, in[1], axis);
    const std::vector<int64_t> idx = in[1].to_int64s();
    const Shape xs = shape_strides(x.shape());
    Tensor out(x.dtype(), in[1].shape());
    const size_t es = dtype_size(x.dtype());
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(out.raw());
    for_each_index(in[1].shape(), [&](int64_t flat, const std::vector<int64_t>& ix) {
      int64_t off = 0;
      for (size_t k = 0; k < ix.size(); ++k)
        off +=
            (k == axis ? checked_index(idx[static_cast<size_t>(flat)], x.shape()[k], n) : ix[k]) *
            xs[k];
      std::memcpy(dst + static_cast<size_t>(flat) * es, src + static_cast<size_t>(off) * es, es);
    });
    return std::vector<Tensor>{out};
  };
  return d;
}

/// GatherND's output dims: indices[:-1] + data[batch_dims + m:], with m = indices' last dim.
std::optional<std::vector<Dim>> gather_nd_dims(const InferContext& ctx) {
  const TensorType& t = ctx.type(0);
  const TensorType& idx = ctx.type(1);
  const int64_t b = ctx.attrs().get_int("batch_dims", 0);
  if (!t.has_rank || !idx.has_rank) return std::nullopt;
  if (idx.rank() < 1 || b < 0 || b >= std::min(t.rank(), idx.rank()))
    ctx.fail("batch_dims {} must be less than the ranks of data {} and indices {}", b, t.str(),
             idx.str());
  const Dim& m = idx.dims.back();
  if (!m.known()) return std::nullopt;
  if (b + m.value > t.rank())
    ctx.fail("indices {} address {} dims of data {} after {} batch dims", idx.str(), m.value,
             t.str(), b);
  std::vector<Dim> dims(idx.dims.begin(), idx.dims.end() - 1);
  dims.insert(dims.end(), t.dims.begin() + b + m.value, t.dims.end());
  return dims;
}

OpDef make_gather_nd() {
  OpDef d;
  d.name = "GatherND";
  d.traits = kTraitInjective;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "picks slices of data addressed by the index tuples in the last dim of indices";
  d.infer = [](const InferContext& ctx) {
    if (ctx.type(1).dtype != DType::kInt64)
      ctx.fail("indices must be int64, got {}", ctx.type(1).str());
    const DType dt = ctx.type(0).dtype;
    if (auto dims = gather_nd_dims(ctx)) return std::vector<TensorType>{TensorType(dt, *dims)};
    return std::vector<TensorType>{TensorType::unranked(dt)};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& it = in[1];
    const auto b = static_cast<size_t>(n.attrs.get_int("batch_dims", 0));
    const Shape& xs = x.shape();
    const Shape& is = it.shape();
    if (is.empty() || b >= std::min(xs.size(), is.size()) ||
        b + static_cast<size_t>(is.back()) > xs.size() ||
        !std::equal(xs.begin(), xs.begin() + static_cast<int64_t>(b), is.begin()))
      user_error("{}: indices {} do not fit data {} with batch_dims {}", n.label(), describe(it),
                 describe(x), b);
    const auto m = static_cast<size_t>(is.back());
    Shape shape(is.begin(), is.end() - 1);
    shape.insert(shape.end(), xs.begin() + static_cast<int64_t>(b + m), xs.end());
    Tensor out(x.dtype(), shape);
    const std::vector<int64_t> idx = it.to_int64s();
    const int64_t batches = numel_of(xs, 0, b);
    const int64_t tuples = numel_of(is, b, is.size() - 1);  // per batch
    const size_t es = dtype_size(x.dtype());
    const size_t block = static_cast<size_t>(numel_of(xs, b + m, xs.size())) * es;
    const int64_t batch_stride = numel_of(xs, b, xs.size());
    const Shape strides = shape_strides(xs);
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(out.raw());
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t t = 0; t < tuples; ++t) {
        const int64_t* tuple = idx.data() + (bi * tuples + t) * static_cast<int64_t>(m);
        int64_t off = bi * batch_stride;
        for (size_t k = 0; k < m; ++k)
          off += checked_index(tuple[k], xs[b + k], n) * strides[b + k];
        std::memcpy(dst, src + static_cast<size_t>(off) * es, block);
        dst += block;
      }
    return std::vector<Tensor>{out};
  };
  return d;
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const Node& n) {
  const std::string r = n.attrs.get_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  user_error("{}: reduction must be none, add, mul, max or min, got '{}'", n.label(), r);
}

template <typename T>
T reduce(Reduction r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return b;
  } else {
    switch (r) {
      case Reduction::kAdd: return static_cast<T>(a + b);
      case Reduction::kMul: return static_cast<T>(a * b);
      case Reduction::kMax: return a < b ? b : a;
      case Reduction::kMin: return b < a ? b : a;
      case Reduction::kNone: break;
    }
    return b;
  }
}

/// Runs f(T tag) for the scatter's data type: every type without reduction, numeric ones with.
template <typename F>
std::vector<Tensor> dispatch_scatter(const Node& n, const Tensor& data, const Tensor& updates,
                                     F f) {
  if (updates.dtype() != data.dtype())
    user_error("{}: updates {} must have the type of data {}", n.label(), describe(updates),
               describe(data));
  if (reduction_of(n) == Reduction::kNone) return dispatch_all(data.dtype(), f, n.label());
  return dispatch_numeric(data.dtype(), f, n.label());
}

std::vector<TensorType> infer_scatter(const InferContext& ctx) {
  if (ctx.type(2).dtype != ctx.type(0).dtype)
    ctx.fail("updates {} must have the type of data {}", ctx.type(2).str(), ctx.type(0).str());
  reduction_of(ctx.node);
  return {ctx.type(0)};
}

OpDef make_scatter_nd() {
  OpDef d;
  d.name = "ScatterND";
  d.min_inputs = d.max_inputs = 3;
  d.doc =
      "a copy of data with the slices addressed by indices replaced by (or reduced with) "
      "updates";
  d.infer = [](const InferContext& ctx) {
    if (ctx.type(1).dtype != DType::kInt64)
      ctx.fail("indices must be int64, got {}", ctx.type(1).str());
    return infer_scatter(ctx);
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& it = in[1];
    const Tensor& up = in[2];
    const Shape& xs = x.shape();
    const Shape& is = it.shape();
    bool ok = !is.empty() && is.back() <= x.rank();
    Shape want;
    if (ok) {
      want.assign(is.begin(), is.end() - 1);
      want.insert(want.end(), xs.begin() + is.back(), xs.end());
      ok = up.shape() == want;
    }
    if (!ok)
      user_error("{}: indices {} and updates {} do not fit data {}", n.label(), describe(it),
                 describe(up), describe(x));
    const auto m = static_cast<size_t>(is.back());
    const std::vector<int64_t> idx = it.to_int64s();
    const int64_t tuples = numel_of(is, 0, is.size() - 1);
    const int64_t block = numel_of(xs, m, xs.size());
    const Shape strides = shape_strides(xs);
    const Reduction r = reduction_of(n);
    return dispatch_scatter(n, x, up, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor out = x.clone();
      T* o = out.data<T>();
      const T* u = up.data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = 0;
        for (size_t k = 0; k < m; ++k)
          off += checked_index(idx[static_cast<size_t>(t) * m + k], xs[k], n) * strides[k];
        for (int64_t e = 0; e < block; ++e) o[off + e] = reduce(r, o[off + e], u[t * block + e]);
      }
      return std::vector<Tensor>{out};
    });
  };
  return d;
}

OpDef make_scatter_elements() {
  OpDef d;
  d.name = "ScatterElements";
  d.min_inputs = d.max_inputs = 3;
  d.doc = "a copy of data with data[indices[i][j]][j] = updates[i][j] (for axis 0), or reduced";
  d.infer = [](const InferContext& ctx) {
    check_indices_type(ctx, 1);
    return infer_scatter(ctx);
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& it = in[1];
    const Tensor& up = in[2];
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.get_int("axis", 0), x.rank(), n));
    check_elements_shapes(n, x, it, axis);
    if (up.shape() != it.shape())
      user_error("{}: updates {} must have the shape of indices {}", n.label(), describe(up),
                 describe(it));
    const std::vector<int64_t> idx = it.to_int64s();
    const Shape xs = shape_strides(x.shape());
    const Reduction r = reduction_of(n);
    return dispatch_scatter(n, x, up, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor out = x.clone();
      T* o = out.data<T>();
      const T* u = up.data<T>();
      for_each_index(it.shape(), [&](int64_t flat, const std::vector<int64_t>& ix) {
        int64_t off = 0;
        for (size_t k = 0; k < ix.size(); ++k)
          off +=
              (k == axis ? checked_index(idx[static_cast<size_t>(flat)], x.shape()[k], n) : ix[k]) *
              xs[k];
        o[off] = reduce(r, o[off], u[flat]);
      });
      return std::vector<Tensor>{out};
    });
  };
  return d;
}

int64_t topk_k(const Node& n, const Tensor& k) {
  if (k.numel() != 1 || k.rank() > 1)
    user_error("{}: K must be a 1-element 1-D tensor, got {}", n.label(), describe(k));
  return k.to_int64s()[0];
}

OpDef make_topk() {
  OpDef d;
  d.name = "TopK";
  d.min_inputs = d.max_inputs = 2;
  d.min_outputs = d.max_outputs = 2;
  d.doc =
      "the K largest (or smallest) values along axis and their indices; ties keep the lower "
      "index first";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (ctx.type(1).dtype != DType::kInt64) ctx.fail("K must be int64, got {}", ctx.type(1).str());
    if (!t.has_rank)
      return std::vector<TensorType>{TensorType::unranked(t.dtype),
                                     TensorType::unranked(DType::kInt64)};
    const auto axis =
        static_cast<size_t>(normalize_axis(ctx.attrs().get_int("axis", -1), t.rank(), ctx.node));
    std::vector<Dim> dims = t.dims;
    dims[axis] = Dim();
    if (const Tensor* k = ctx.value(1)) {
      const int64_t kv = topk_k(ctx.node, *k);
      if (kv < 0 || (t.dims[axis].known() && kv > t.dims[axis].value))
        ctx.fail("K = {} is out of range for a dim of size {}", kv, t.dims[axis].str());
      dims[axis] = Dim(kv);
    }
    return std::vector<TensorType>{TensorType(t.dtype, dims), TensorType(DType::kInt64, dims)};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.get_int("axis", -1), x.rank(), n));
    const int64_t k = topk_k(n, in[1]);
    const int64_t dim = x.shape()[axis];
    if (k < 0 || k > dim)
      user_error("{}: K = {} is out of range for a dim of size {}", n.label(), k, dim);
    const bool largest = n.attrs.get_int("largest", 1) != 0;
    Shape shape = x.shape();
    shape[axis] = k;
    const int64_t outer = numel_of(x.shape(), 0, axis);
    const int64_t inner = numel_of(x.shape(), axis + 1, x.shape().size());
    Tensor indices(DType::kInt64, shape);
    return dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          Tensor values(x.dtype(), shape);
          const T* src = x.data<T>();
          T* ov = values.data<T>();
          int64_t* oi = indices.data<int64_t>();
          std::vector<int64_t> order(static_cast<size_t>(dim));
          std::vector<double> key(static_cast<size_t>(dim));
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              const int64_t base = o * dim * inner + i;
              for (int64_t j = 0; j < dim; ++j) {
                // NaN sorts as the largest value, which keeps the order strict and weak.
                const double v = static_cast<double>(src[base + j * inner]);
                key[static_cast<size_t>(j)] = std::isnan(v) ? INFINITY : v;
                order[static_cast<size_t>(j)] = j;
              }
              auto before = [&](int64_t a, int64_t b) {
                const double ka = key[static_cast<size_t>(a)], kb = key[static_cast<size_t>(b)];
                if (ka != kb) return largest ? ka > kb : ka < kb;
                const bool na = std::isnan(static_cast<double>(src[base + a * inner]));
                const bool nb = std::isnan(static_cast<double>(src[base + b * inner]));
                if (na != nb) return largest ? na : nb;
                return a < b;
              };
              std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
              const int64_t out_base = o * k * inner + i;
              for (int64_t j = 0; j < k; ++j) {
                const int64_t src_j = order[static_cast<size_t>(j)];
                ov[out_base + j * inner] = src[base + src_j * inner];
                oi[out_base + j * inner] = src_j;
              }
            }
          return std::vector<Tensor>{values, indices};
        },
        n.label());
  };
  return d;
}

OpDef make_nonzero() {
  OpDef d;
  d.name = "NonZero";
  d.doc = "the indices of the non-zero elements as int64[rank, count]";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    return std::vector<TensorType>{
        TensorType(DType::kInt64, {t.has_rank ? Dim(t.rank()) : Dim(), Dim()})};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    std::vector<std::vector<int64_t>> found;
    dispatch_all(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* p = x.data<T>();
          for_each_index(x.shape(), [&](int64_t flat, const std::vector<int64_t>& ix) {
            if (static_cast<double>(p[flat]) != 0.0) found.push_back(ix);
          });
        },
        n.label());
    const auto count = static_cast<int64_t>(found.size());
    Tensor out(DType::kInt64, {x.rank(), count});
    int64_t* o = out.data<int64_t>();
    for (int64_t c = 0; c < count; ++c)
      for (int64_t r = 0; r < x.rank(); ++r)
        o[r * count + c] = found[static_cast<size_t>(c)][static_cast<size_t>(r)];
    return std::vector<Tensor>{out};
  };
  return d;
}

OpDef make_trilu() {
  OpDef d;
  d.name = "Trilu";
  d.max_inputs = 2;
  d.doc =
      "keeps the upper (or lower) triangle of the last two dims from diagonal k, zeroes the "
      "rest";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (t.has_rank && t.rank() < 2) ctx.fail("the input must have rank >= 2, got {}", t.str());
    return std::vector<TensorType>{t};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.rank() < 2)
      user_error("{}: the input must have rank >= 2, got {}", n.label(), describe(x));
    int64_t k = 0;
    if (in.size() > 1 && in[1].defined()) {
      if (in[1].numel() != 1)
        user_error("{}: k must be a scalar, got {}", n.label(), describe(in[1]));
      k = in[1].to_int64s()[0];
    }
    const bool upper = n.attrs.get_int("upper", 1) != 0;
    const int64_t rows = x.dim(-2), cols = x.dim(-1);
    // Clamp k so that j - i (in (-rows, cols)) compares without overflow.
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    Tensor out = x.clone();
    const size_t es = dtype_size(x.dtype());
    auto* o = static_cast<uint8_t*>(out.raw());
    const int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = upper ? j - i >= k : j - i <= k;
          if (!keep) std::memset(o + static_cast<size_t>((m * rows + i) * cols + j) * es, 0, es);
        }
    return std::vector<Tensor>{out};
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(make_gather());
YOLOC_REGISTER_OP(make_gather_elements());
YOLOC_REGISTER_OP(make_gather_nd());
YOLOC_REGISTER_OP(make_scatter_nd());
YOLOC_REGISTER_OP(make_scatter_elements());
YOLOC_REGISTER_OP(make_topk());
YOLOC_REGISTER_OP(make_nonzero());
YOLOC_REGISTER_OP(make_trilu());

}  // namespace yoloc
