#pragma once
/// The histogram of an activation's magnitudes |x| that calibration collects per tensor: a fixed
/// number of equal bins over [0, range); the range doubles (pairs of bins merged) whenever a
/// larger value arrives, so one pass over the images suffices. The signed extremes are kept
/// too (the zero point of an activation that is rarely negative).
#include <cstdint>
#include <vector>

namespace yoloc::quant {

class Histogram {
 public:
  static constexpr int kBins = 2048;

  Histogram() : counts_(kBins, 0.0) {}
  /// A histogram as stored (calibration file): `counts` of kBins bins over [0, range).
  Histogram(double range, std::vector<double> counts, double min, double max);

  void add(const float* x, int64_t n);

  double range() const { return range_; }
  double bin_width() const { return range_ / kBins; }
  const std::vector<double>& counts() const { return counts_; }
  double total() const;
  double min() const { return min_; }  ///< the smallest value seen (signed), 0 when none
  double max() const { return max_; }  ///< the largest value seen (signed), 0 when none
  double abs_max() const;

 private:
  void grow_to(double abs_max);
  double range_ = 0;
  std::vector<double> counts_;
  double min_ = 0, max_ = 0;
  bool seen_ = false;
};

}  // namespace yoloc::quant
