#include "onnx_conformance/tolerance.h"

#include <fmt/format.h>

#include <cmath>

namespace yoloc::conformance {

Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat64: return {1e-3, 1e-7};
    case DType::kFloat16: return {2e-3, 1e-7};
    case DType::kBFloat16: return {1.6e-2, 1e-7};
    default: return {0, 0};
  }
}

namespace {

/// The multi-index of flat element i, for messages.
std::string index_str(const Shape& shape, int64_t i) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return shape_str(idx);
}

}  // namespace

std::string compare_tensors(const Tensor& expected, const Tensor& actual) {
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape())
    return fmt::format("expected {}, got {}", describe(expected), describe(actual));
  const int64_t n = expected.numel();
  int64_t bad = 0;
  int64_t worst = -1;
  double worst_excess = -1;
  std::string worst_msg;
  if (is_float(expected.dtype())) {
    const Tolerance tol = tolerance_for(expected.dtype());
    const std::vector<double> e = expected.to_doubles();
    const std::vector<double> a = actual.to_doubles();
    for (int64_t i = 0; i < n; ++i) {
      const double x = e[static_cast<size_t>(i)];
      const double y = a[static_cast<size_t>(i)];
      bool ok;
      double excess;
      if (std::isnan(x) || std::isnan(y)) {
        ok = std::isnan(x) && std::isnan(y);
        excess = HUGE_VAL;
      } else if (std::isinf(x) || std::isinf(y)) {
        ok = x == y;
        excess = HUGE_VAL;
      } else {
        const double bound = tol.atol + tol.rtol * std::fabs(x);
        excess = std::fabs(x - y) - bound;
        ok = excess <= 0;
      }
      if (ok) continue;
      ++bad;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
        worst_msg = fmt::format(
            "expected {}, got {} (|diff| {:.3g} > atol {:g} + rtol {:g} * "
            "|expected|)",
            x, y, std::fabs(x - y), tol.atol, tol.rtol);
      }
    }
  } else {
    const std::vector<int64_t> e = expected.to_int64s();
    const std::vector<int64_t> a = actual.to_int64s();
    for (int64_t i = 0; i < n; ++i) {
      if (e[static_cast<size_t>(i)] == a[static_cast<size_t>(i)]) continue;
      if (bad++ == 0) {
        worst = i;
        worst_msg = fmt::format("expected {}, got {} (exact)", e[static_cast<size_t>(i)],
                                a[static_cast<size_t>(i)]);
      }
    }
  }
  if (bad == 0) return "";
  return fmt::format("{} of {} elements of {} differ; worst at {}: {}", bad, n, describe(expected),
                     index_str(expected.shape(), worst), worst_msg);
}

}  // namespace yoloc::conformance
