#include "tools/bench_timing.h"

#include <algorithm>
#include <numeric>

namespace yoloc::tools {

namespace {

/// The q-quantile (0..1) of sorted samples, linearly interpolated.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  Stats s;
  s.median = quantile(ms, 0.5);
  s.p90 = quantile(ms, 0.9);
  s.p99 = quantile(ms, 0.99);
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

detect::Image synthetic_frame() {
  detect::Image img;
  img.width = 1280;
  img.height = 720;
  img.bgr.resize(static_cast<size_t>(img.width) * img.height * 3);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < 3; ++c)
        img.bgr[(static_cast<size_t>(y) * img.width + x) * 3 + c] =
            static_cast<uint8_t>((x * (c + 1) + y * (3 - c)) / 8 % 256);
  return img;
}

}  // namespace yoloc::tools
