// The int8 calibration's scale methods and histogram, against values computed by hand or by the
// independent numpy references of quant_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "quant/histogram.h"
#include "quant/scale_methods.h"

namespace yoloc::quant {
namespace {

/// The histogram of quant_reference.py's test_histogram().
std::vector<double> reference_histogram() {
  std::vector<double> h(512);
  for (int i = 0; i < 512; ++i) h[i] = std::nearbyint(1000 * std::exp(-i / 40.0));
  h[400] += 3;
  h[500] += 1;
  return h;
}

TEST(QuantScale, EntropyThresholdMatchesTheNumpyReference) {
  // quant_reference.py: entropy 306 (bins kept of a 0.5-wide bin: threshold 153).
  EXPECT_DOUBLE_EQ(entropy_threshold(reference_histogram(), 0.5, 128), 306 * 0.5);
}

TEST(QuantScale, EntropyOfAHistogramNarrowerThanTheLevelsIsItsRange) {
  std::vector<double> h(2048, 0.0);
  for (int i = 0; i < 100; ++i) h[i] = 1;
  EXPECT_DOUBLE_EQ(entropy_threshold(h, 0.01, 128), 1.0);
}

TEST(QuantScale, PercentileOfAUniformDistribution) {
  // 10,000 values one per bin: 99.99 % of them (9,999) lie below the upper edge of bin 9,998.
  EXPECT_DOUBLE_EQ(percentile_threshold(std::vector<double>(10000, 1.0), 0.25, 99.99),
                   9999 * 0.25);
  EXPECT_DOUBLE_EQ(percentile_threshold({5, 3, 2}, 1.0, 50), 1.0);
  EXPECT_DOUBLE_EQ(percentile_threshold({5, 3, 2}, 1.0, 90), 3.0);
}

TEST(QuantScale, MseByHand) {
  // One level, all mass at centre 3.5: T = 1, 2, 3, 4 give errors 6.25, 2.25, 0.25, 0.25.
  EXPECT_DOUBLE_EQ(mse_threshold({0, 0, 0, 10}, 1.0, 1), 3.0);
}

TEST(QuantScale, MseMatchesTheNumpyReference) {
  // quant_reference.py: mse127 423, mse16 237.
  EXPECT_DOUBLE_EQ(mse_threshold(reference_histogram(), 1.0, 127), 423.0);
  EXPECT_DOUBLE_EQ(mse_threshold(reference_histogram(), 1.0, 16), 237.0);
}

TEST(QuantScale, HistogramGrowsByMergingBins) {
  Histogram h;
  const float a[] = {1.0f};
  h.add(a, 1);
  EXPECT_DOUBLE_EQ(h.range(), 1.0);
  EXPECT_EQ(h.counts()[2047], 1);  // |x| == range falls in the last bin
  const float b[] = {3.0f, -0.5f};
  h.add(b, 2);
  // 1 -> 2 -> 4: bin 2047 -> 1023 -> 511; 3.0 at 3 / 4 * 2048 = 1536; |-0.5| at 256.
  EXPECT_DOUBLE_EQ(h.range(), 4.0);
  EXPECT_EQ(h.counts()[511], 1);
  EXPECT_EQ(h.counts()[1536], 1);
  EXPECT_EQ(h.counts()[256], 1);
  EXPECT_DOUBLE_EQ(h.total(), 3);
  EXPECT_DOUBLE_EQ(h.min(), -0.5);
  EXPECT_DOUBLE_EQ(h.max(), 3.0);
}

TEST(QuantScale, MinMaxOfANonNegativeActivationIsAsymmetric) {
  Histogram h;
  std::vector<float> x;
  for (int i = 0; i <= 1000; ++i) x.push_back(i * 0.01f);  // 0 .. 10
  h.add(x.data(), static_cast<int64_t>(x.size()));
  const ActivationQuant q = activation_quant(h, Method::kMinMax);
  // [0, 10] in 255 steps, 0 at -128.
  EXPECT_FLOAT_EQ(q.scale, 10.0f / 255.0f);
  EXPECT_EQ(q.zero_point, -128);
}

TEST(QuantScale, MinMaxOfASignedActivationIsSymmetric) {
  Histogram h;
  const float x[] = {-4.0f, 1.0f, 2.0f};
  h.add(x, 3);
  const ActivationQuant q = activation_quant(h, Method::kMinMax);
  EXPECT_FLOAT_EQ(q.scale, 4.0f / 127.0f);
  EXPECT_EQ(q.zero_point, 0);
}

TEST(QuantScale, UnknownMethodIsAUserError) {
  EXPECT_THROW(parse_method("kl"), UserError);
  EXPECT_EQ(parse_method("mse"), Method::kMse);
}

}  // namespace
}  // namespace yoloc::quant
