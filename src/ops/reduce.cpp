// Reductions over axes: ReduceMax/Min/Sum/Mean/Prod/L1/L2/LogSum/LogSumExp/SumSquare in the
// opset-18 form (data, optional axes input; attributes keepdims=1, noop_with_empty_axes=0), and
// ArgMax/ArgMin (attributes axis=0, keepdims=1, select_last_index=0; int64 indices).
//
// Float reductions accumulate in double and round once. Integer Sum/Prod/SumSquare/L1 accumulate
// in uint64 so overflow wraps (as ONNX Runtime's integer kernels do) instead of being UB.
#include <cmath>
#include <limits>

#include "ops/op_common.h"

namespace yoloc {

namespace {

enum class Reduce { kMax, kMin, kSum, kMean, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

bool keepdims(const Node& n) { return n.attrs.get_int("keepdims", 1) != 0; }

/// Which dims of a rank-`rank` input are reduced, given the axes input (nullptr when omitted).
std::vector<bool> reduced_dims(const Tensor* axes, int64_t rank, const Node& n) {
  const bool noop = n.attrs.get_int("noop_with_empty_axes", 0) != 0;
  if (!axes || axes->numel() == 0) return std::vector<bool>(static_cast<size_t>(rank), !noop);
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes->to_int64s()) {
    const size_t i = static_cast<size_t>(normalize_axis_upto(a, rank, rank - 1, n));
    if (mask[i]) user_error("{}: axis {} is listed twice in axes", n.label(), a);
    mask[i] = true;
  }
  return mask;
}

/// The output dims: reduced dims become 1 (keepdims) or vanish.
std::vector<Dim> reduced_type_dims(const std::vector<Dim>& dims, const std::vector<bool>& mask,
                                   bool keep) {
  std::vector<Dim> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!mask[i])
      out.push_back(dims[i]);
    else if (keep)
      out.push_back(Dim(1));
  }
  return out;
}

bool allows(Reduce kind, DType t) {
  if (t == DType::kUndefined) return false;
  // Boolean inputs are valid for ReduceMax/ReduceMin only (opset 20).
  return t != DType::kBool || kind == Reduce::kMax || kind == Reduce::kMin;
}

std::vector<TensorType> infer_reduce(const InferContext& ctx, Reduce kind) {
  const TensorType& t = ctx.type(0);
  if (!allows(kind, t.dtype)) ctx.fail("input 0 must have a numeric type, got {}", t.str());
  const bool keep = keepdims(ctx.node);
  const Tensor* axes = nullptr;
  if (ctx.has_input(1)) {
    if (!is_integer(ctx.type(1).dtype))
      ctx.fail("axes (input 1) must be an integer tensor, got {}", ctx.type(1).str());
    axes = ctx.value(1);
    if (!axes) {
      // Axes computed at run time: the rank is known only when it cannot change.
      if (!t.has_rank) return {TensorType::unranked(t.dtype)};
      if (keep) return {TensorType(t.dtype, std::vector<Dim>(t.dims.size(), Dim()))};
      const TensorType& at = ctx.type(1);
      if (at.is_static() && shape_numel(at.static_shape()) > 0 &&
          shape_numel(at.static_shape()) <= t.rank())
        return {TensorType(t.dtype, std::vector<Dim>(static_cast<size_t>(
                                        t.rank() - shape_numel(at.static_shape()))))};
      return {TensorType::unranked(t.dtype)};
    }
  }
  if (!t.has_rank) return {TensorType::unranked(t.dtype)};
  return {
      TensorType(t.dtype, reduced_type_dims(t.dims, reduced_dims(axes, t.rank(), ctx.node), keep))};
}

/// For every input element, the flat index of the output element it reduces into.
std::vector<int64_t> output_index_of(const Shape& in, const std::vector<bool>& mask) {
  Shape kept = in;
  for (size_t i = 0; i < in.size(); ++i)
    if (mask[i]) kept[i] = 1;
  const Shape kst = shape_strides(kept);
  const int64_t total = shape_numel(in);
  std::vector<int64_t> map(static_cast<size_t>(total));
  std::vector<int64_t> idx(in.size(), 0);
  int64_t o = 0;
  for (int64_t i = 0; i < total; ++i) {
    map[static_cast<size_t>(i)] = o;
    for (size_t d = in.size(); d-- > 0;) {
      ++idx[d];
      if (!mask[d]) o += kst[d];
      if (idx[d] < in[d]) break;
      if (!mask[d]) o -= kst[d] * in[d];
      idx[d] = 0;
    }
  }
  return map;
}

/// The reduction in double: float types for every kind, integers for the kinds whose result is
/// not an integer (Mean, L2, LogSum, LogSumExp).
std::vector<double> reduce_in_double(const std::vector<double>& x, const std::vector<int64_t>& map,
                                     int64_t out_n, int64_t count, Reduce kind) {
  const double inf = std::numeric_limits<double>::infinity();
  const size_t n = static_cast<size_t>(out_n);
  auto fold = [&](double init, auto combine) {
    std::vector<double> acc(n, init);
    for (size_t i = 0; i < x.size(); ++i) {
      double& a = acc[static_cast<size_t>(map[i])];
      a = combine(a, x[i]);
    }
    return acc;
  };
  // NaN propagates through max/min as in numpy.
  auto max = [&] { return fold(-inf, [](double a, double v) { return v > a || v != v ? v : a; }); };
  auto sum = [&] { return fold(0.0, [](double a, double v) { return a + v; }); };
  auto sum_sq = [&] { return fold(0.0, [](double a, double v) { return a + v * v; }); };
  std::vector<double> r;
  switch (kind) {
    case Reduce::kMax: return max();
    case Reduce::kMin: return fold(inf, [](double a, double v) { return v < a || v != v ? v : a; });
    case Reduce::kSum: return sum();
    case Reduce::kSumSquare: return sum_sq();
    case Reduce::kProd: return fold(1.0, [](double a, double v) { return a * v; });
    case Reduce::kL1: return fold(0.0, [](double a, double v) { return a + std::fabs(v); });
    case Reduce::kMean:
      r = sum();
      for (double& v : r) v /= static_cast<double>(count);  // 0 / 0 = NaN for an empty reduction
      return r;
    case Reduce::kL2:
      r = sum_sq();
      for (double& v : r) v = std::sqrt(v);
      return r;
    case Reduce::kLogSum:
      r = sum();
      for (double& v : r) v = std::log(v);
      return r;
    case Reduce::kLogSumExp: {
      const std::vector<double> m = max();
      r.assign(n, 0.0);
      for (size_t i = 0; i < x.size(); ++i) {
        const size_t o = static_cast<size_t>(map[i]);
        if (std::isfinite(m[o])) r[o] += std::exp(x[i] - m[o]);
      }
      // An infinite or NaN maximum is the result itself (and -inf for an empty reduction).
      for (size_t o = 0; o < n; ++o) r[o] = std::isfinite(m[o]) ? m[o] + std::log(r[o]) : m[o];
      return r;
    }
  }
  return r;
}

/// Integer Max/Min in the element type; Sum/Prod/SumSquare/L1 wrapping in uint64.
template <typename T>
Tensor reduce_integer(const Tensor& x, const std::vector<int64_t>& map, const Shape& kept,
                      Reduce kind) {
  Tensor out(x.dtype(), kept);
  T* po = out.data<T>();
  const T* px = x.data<T>();
  const int64_t n = out.numel();
  if (kind == Reduce::kMax || kind == Reduce::kMin) {
    const bool is_max = kind == Reduce::kMax;
    for (int64_t o = 0; o < n; ++o)
      po[o] = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    for (int64_t i = 0; i < x.numel(); ++i) {
      T& a = po[map[static_cast<size_t>(i)]];
      if (is_max ? a < px[i] : px[i] < a) a = px[i];
    }
    return out;
  }
  if constexpr (!std::is_same_v<T, bool>) {
    std::vector<uint64_t> acc(static_cast<size_t>(n), kind == Reduce::kProd ? 1 : 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const T v = px[i];
      uint64_t u = static_cast<uint64_t>(v);
      if (kind == Reduce::kL1 && v < T{0}) u = uint64_t{0} - u;
      uint64_t& a = acc[static_cast<size_t>(map[static_cast<size_t>(i)])];
      switch (kind) {
        case Reduce::kProd: a *= u; break;
        case Reduce::kSumSquare: a += u * u; break;
        default: a += u; break;  // Sum, L1
      }
    }
    for (int64_t o = 0; o < n; ++o) po[o] = static_cast<T>(acc[static_cast<size_t>(o)]);
  }
  return out;
}

std::vector<Tensor> run_reduce(const Node& n, const std::vector<Tensor>& in, Reduce kind) {
  const Tensor& x = in[0];
  if (!allows(kind, x.dtype()))
    user_error("{}: input must have a numeric type, got {}", n.label(), describe(x));
  const Tensor* axes = in.size() > 1 && in[1].defined() ? &in[1] : nullptr;
  const std::vector<bool> mask = reduced_dims(axes, x.rank(), n);
  Shape kept = x.shape(), out_shape;
  int64_t count = 1;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (mask[i]) {
      count *= kept[i];
      kept[i] = 1;
      if (keepdims(n)) out_shape.push_back(1);
    } else {
      out_shape.push_back(kept[i]);
    }
  }
  const std::vector<int64_t> map = output_index_of(x.shape(), mask);
  const bool integer_result = kind == Reduce::kMax || kind == Reduce::kMin ||
                              kind == Reduce::kSum || kind == Reduce::kProd ||
                              kind == Reduce::kL1 || kind == Reduce::kSumSquare;
  Tensor out;
  if (!is_float(x.dtype()) && integer_result) {
    out = dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) return reduce_integer<T>(x, map, kept, kind);
      internal_error("{}: float type on the integer path", n.label());
      return Tensor();
    });
  } else {
    const std::vector<double> r =
        reduce_in_double(x.to_doubles(), map, shape_numel(kept), count, kind);
    out = Tensor::from_vector<double>(kept, r);
    if (x.dtype() != DType::kFloat64) out = out.cast(x.dtype());
  }
  return {out.reshaped(out_shape)};
}

OpDef reduce_def(const char* name, Reduce kind, const char* doc) {
  OpDef d;
  d.name = name;
  d.traits = kTraitReduction;
  d.min_inputs = 1;
  d.max_inputs = 2;
  d.doc = doc;
  d.infer = [kind](const InferContext& ctx) { return infer_reduce(ctx, kind); };
  d.reference = [kind](const Node& n, const std::vector<Tensor>& in) {
    return run_reduce(n, in, kind);
  };
  return d;
}

OpDef arg_def(const char* name, bool is_max) {
  OpDef d;
  d.name = name;
  d.traits = kTraitReduction;
  d.doc =
      is_max ? "int64 index of the maximum along axis" : "int64 index of the minimum along axis";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (t.dtype == DType::kBool || t.dtype == DType::kUndefined)
      ctx.fail("input must have a numeric type, got {}", t.str());
    if (!t.has_rank) return std::vector<TensorType>{TensorType::unranked(DType::kInt64)};
    const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", 0), t.rank(), ctx.node);
    std::vector<bool> mask(t.dims.size(), false);
    if (t.rank() > 0) mask[static_cast<size_t>(axis)] = true;
    return std::vector<TensorType>{
        TensorType(DType::kInt64, reduced_type_dims(t.dims, mask, keepdims(ctx.node)))};
  };
  d.reference = [is_max](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const int64_t rank = x.rank();
    const int64_t axis = normalize_axis(n.attrs.get_int("axis", 0), rank, n);
    const bool last = n.attrs.get_int("select_last_index", 0) != 0;
    const int64_t len = rank ? x.dim(axis) : 1;
    if (len == 0) user_error("{}: cannot take {} over an empty axis {}", n.label(), n.op, axis);
    int64_t outer = 1, inner = 1;
    Shape out_shape;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axis) outer *= x.dim(i);
      if (i > axis) inner *= x.dim(i);
      if (i != axis || keepdims(n)) out_shape.push_back(i == axis ? 1 : x.dim(i));
    }
    Tensor out(DType::kInt64, out_shape);
    int64_t* po = out.data<int64_t>();
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              const T* row = px + o * len * inner + i;
              int64_t best = 0;
              for (int64_t k = 1; k < len; ++k) {
                const T v = row[k * inner];
                const T b = row[best * inner];
                const bool better = is_max ? b < v : v < b;
                if (better || (last && !(v < b) && !(b < v))) best = k;
              }
              po[o * inner + i] = best;
            }
        },
        n.label());
    return std::vector<Tensor>{out};
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(reduce_def("ReduceMax", Reduce::kMax, "maximum over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceMin", Reduce::kMin, "minimum over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceSum", Reduce::kSum, "sum over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceMean", Reduce::kMean, "mean over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceProd", Reduce::kProd, "product over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceL1", Reduce::kL1, "sum of |x| over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceL2", Reduce::kL2, "sqrt(sum(x^2)) over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceLogSum", Reduce::kLogSum, "log(sum(x)) over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceLogSumExp", Reduce::kLogSumExp, "log(sum(e^x)) over axes"));
YOLOC_REGISTER_OP(reduce_def("ReduceSumSquare", Reduce::kSumSquare, "sum(x^2) over axes"));
YOLOC_REGISTER_OP(arg_def("ArgMax", true));
YOLOC_REGISTER_OP(arg_def("ArgMin", false));

}  // namespace yoloc
