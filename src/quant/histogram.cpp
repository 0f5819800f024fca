#include "quant/histogram.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace yoloc::quant {

Histogram::Histogram(double range, std::vector<double> counts, double min, double max)
    : range_(range), counts_(std::move(counts)), min_(min), max_(max), seen_(true) {
  if (static_cast<int>(counts_.size()) != kBins || !(range_ >= 0))
    user_error("a calibration histogram must have {} bins and a range >= 0", kBins);
}

double Histogram::total() const { return std::accumulate(counts_.begin(), counts_.end(), 0.0); }

double Histogram::abs_max() const { return std::max(std::fabs(min_), std::fabs(max_)); }

void Histogram::grow_to(double m) {
  if (m <= range_) return;
  if (range_ == 0) {
    range_ = m;
    return;
  }
  while (range_ < m) {
    for (int i = 0; i < kBins / 2; ++i) counts_[i] = counts_[2 * i] + counts_[2 * i + 1];
    std::fill(counts_.begin() + kBins / 2, counts_.end(), 0.0);
    range_ *= 2;
  }
}

void Histogram::add(const float* x, int64_t n) {
  if (n <= 0) return;
  float lo = x[0], hi = x[0];
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  min_ = seen_ ? std::min<double>(min_, lo) : lo;
  max_ = seen_ ? std::max<double>(max_, hi) : hi;
  seen_ = true;
  grow_to(abs_max());
  if (range_ == 0) {
    counts_[0] += static_cast<double>(n);
    return;
  }
  const double per = kBins / range_;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    const auto b = static_cast<int64_t>(std::fabs(static_cast<double>(x[i])) * per);
    counts_[static_cast<size_t>(std::min<int64_t>(b, kBins - 1))] += 1;
  }
}

}  // namespace yoloc::quant
