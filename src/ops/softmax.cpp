// Softmax, LogSoftmax and Hardmax along one axis (attribute axis, default -1: the opset-13 form).
//
// Opsets < 13 defined these ops on the input flattened to 2-D at `axis` (dims before it form the
// rows, dims from it on the columns). That is not a per-axis op in general, so the IR op has an
// attribute coerce_2d (default 0) that the old converters set. It was chosen over emitting
// Reshape -> Softmax -> Reshape because those reshapes need the input's shape at run time when
// the batch is symbolic (a Shape/Slice/Concat sub-graph), while the flattened softmax is just the
// per-axis kernel with the axis extent taken as the product of the trailing dims.
#include <cmath>
#include <limits>

#include "ops/op_common.h"

namespace yoloc {

namespace {

enum class Kind { kSoftmax, kLogSoftmax, kHardmax };

/// The input seen as [outer, n, inner], where the op normalizes over n.
struct Layout {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

bool coerce_2d(const Node& node) {
  const int64_t c = node.attrs.get_int("coerce_2d", 0);
  if (c != 0 && c != 1)
    user_error("{}: attribute coerce_2d must be 0 or 1, got {}", node.label(), c);
  return c == 1;
}

Layout layout_of(const Shape& s, const Node& node) {
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) user_error("{}: the input must have rank >= 1, got a scalar", node.label());
  const int64_t axis = normalize_axis(node.attrs.get_int("axis", -1), rank, node);
  const bool flat = coerce_2d(node);
  Layout l;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = s[static_cast<size_t>(i)];
    if (i < axis)
      l.outer *= d;
    else if (i == axis || flat)
      l.n *= d;
    else
      l.inner *= d;
  }
  return l;
}

template <typename T>
void normalize_row(const T* x, T* y, int64_t n, int64_t stride, Kind kind) {
  double mx = -std::numeric_limits<double>::infinity();
  int64_t arg = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double v = static_cast<double>(x[k * stride]);
    if (v > mx) {
      mx = v;
      arg = k;
    }
  }
  if (kind == Kind::kHardmax) {
    for (int64_t k = 0; k < n; ++k) y[k * stride] = static_cast<T>(k == arg ? 1.0 : 0.0);
    return;
  }
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(x[k * stride]) - mx);
  for (int64_t k = 0; k < n; ++k) {
    const double v = static_cast<double>(x[k * stride]) - mx;
    y[k * stride] = static_cast<T>(kind == Kind::kSoftmax ? std::exp(v) / sum : v - std::log(sum));
  }
}

OpDef softmax_like(const char* name, Kind kind, const char* doc) {
  OpDef d;
  d.name = name;
  d.doc = doc;
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!is_float(t.dtype)) ctx.fail("input must have a float type, got {}", t.str());
    coerce_2d(ctx.node);
    if (t.has_rank) {
      if (t.rank() == 0) ctx.fail("the input must have rank >= 1, got a scalar");
      normalize_axis(ctx.attrs().get_int("axis", -1), t.rank(), ctx.node);
    }
    return std::vector<TensorType>{t};
  };
  d.reference = [kind](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Layout l = layout_of(x.shape(), n);
    return dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          Tensor out(x.dtype(), x.shape());
          const T* px = x.data<T>();
          T* po = out.data<T>();
          for (int64_t o = 0; o < l.outer; ++o)
            for (int64_t i = 0; i < l.inner; ++i) {
              const int64_t base = o * l.n * l.inner + i;
              normalize_row(px + base, po + base, l.n, l.inner, kind);
            }
          return std::vector<Tensor>{out};
        },
        n.label());
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(softmax_like("Softmax", Kind::kSoftmax,
                               "e^x / sum(e^x) along axis (coerce_2d: over all dims from axis)"));
YOLOC_REGISTER_OP(softmax_like("LogSoftmax", Kind::kLogSoftmax,
                               "x - log(sum(e^x)) along axis (coerce_2d: over all dims from "
                               "axis)"));
YOLOC_REGISTER_OP(softmax_like("Hardmax", Kind::kHardmax,
                               "1 at the first maximum along axis, else 0 (coerce_2d: over all "
                               "dims from axis)"));

}  // namespace yoloc
