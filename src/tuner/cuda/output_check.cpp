#include "tuner/cuda/output_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codegen/cuda/conv_task.h"
#include "yoloc/half.h"

namespace yoloc::tuner {

double stored_element(const char* p, DType t, uint64_t i) {
  switch (t) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p + i * 4, 4);
      return v;
    }
    case DType::kFloat16: {
      uint16_t b;
      std::memcpy(&b, p + i * 2, 2);
      return half_bits_to_float(b);
    }
    case DType::kBFloat16: {
      BFloat16 v;
      std::memcpy(&v.bits, p + i * 2, 2);
      return static_cast<float>(v);
    }
    default: return std::nan("");
  }
}

double largest_magnitude(const char* p, DType t, uint64_t n) {
  double m = 0;
  for (uint64_t e = 0; e < n; ++e) {
    const double v = std::fabs(stored_element(p, t, e));
    if (v > m) m = v;  // false for NaN
  }
  return m;
}

std::string output_mismatch(const char* got, const char* ref, uint64_t n, DType t, double atol,
                            double rtol, double ref_max) {
  const uint64_t size = dtype_size(t);
  if (!codegen::cuda::is_storage_dtype(t)) {
    return std::memcmp(got, ref, n * size) == 0 ? "" : "the bytes differ from the default config's";
  }
  const double range = t == DType::kFloat32 ? 0.0 : rtol * ref_max;
  // Most elements come out bit for bit as the reference's: runs of equal bytes are skipped at
  // memcmp's speed (a batch-32 output has millions of elements), the rest compared one by one.
  const uint64_t run = 4096 / size;
  for (uint64_t from = 0; from < n; from += run) {
    const uint64_t to = std::min(n, from + run);
    if (std::memcmp(got + from * size, ref + from * size, (to - from) * size) == 0) continue;
    for (uint64_t e = from; e < to; ++e) {
      const double x = stored_element(got, t, e), y = stored_element(ref, t, e);
      if (x == y || (std::isnan(x) && std::isnan(y))) continue;  // also equal infinities
      if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y) + range)) {
        return fmt::format("element {} is {} where the default config computes {}", e, x, y);
      }
    }
  }
  return "";
}

}  // namespace yoloc::tuner
