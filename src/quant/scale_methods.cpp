#include "quant/scale_methods.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace yoloc::quant {

Method parse_method(const std::string& name) {
  if (name == "entropy") return Method::kEntropy;
  if (name == "percentile") return Method::kPercentile;
  if (name == "minmax") return Method::kMinMax;
  if (name == "mse") return Method::kMse;
  user_error("--calibration-method {}: choose entropy, percentile, minmax or mse", name);
}

std::string_view method_name(Method m) {
  switch (m) {
    case Method::kEntropy: return "entropy";
    case Method::kPercentile: return "percentile";
    case Method::kMinMax: return "minmax";
    case Method::kMse: return "mse";
  }
  return "?";
}

namespace {

int used_bins(const std::vector<double>& counts) {
  int n = static_cast<int>(counts.size());
  while (n > 0 && counts[static_cast<size_t>(n - 1)] == 0) --n;
  return n;
}

/// Adds eps to the empty bins and takes the same mass from the others (MXNet / TensorRT's
/// _smooth_distribution); false when every bin is empty.
bool smooth(std::vector<double>& p) {
  constexpr double kEps = 1e-4;
  const auto zeros = static_cast<double>(std::count(p.begin(), p.end(), 0.0));
  const double nonzeros = static_cast<double>(p.size()) - zeros;
  if (nonzeros == 0) return false;
  const double eps1 = kEps * zeros / nonzeros;
  for (double& v : p) v += v == 0 ? kEps : -eps1;
  return true;
}

/// KL(P || Q) of two unnormalised distributions (scipy.stats.entropy).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  const double sp = std::accumulate(p.begin(), p.end(), 0.0);
  const double sq = std::accumulate(q.begin(), q.end(), 0.0);
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i] / sp, qi = q[i] / sq;
    if (pi > 0) kl += qi > 0 ? pi * std::log(pi / qi) : std::numeric_limits<double>::infinity();
  }
  return kl;
}

}  // namespace

double entropy_threshold(const std::vector<double>& counts, double bin_width, int levels) {
  const int bins = static_cast<int>(counts.size());
  if (used_bins(counts) <= levels) return used_bins(counts) * bin_width;
  double best_kl = std::numeric_limits<double>::infinity();
  int best = bins;
  for (int i = levels; i <= bins; ++i) {
    std::vector<double> p(counts.begin(), counts.begin() + i);
    const double outliers = std::accumulate(counts.begin() + i, counts.end(), 0.0);
    p[static_cast<size_t>(i - 1)] += outliers;
    // Q: the i bins (without the outliers) merged into `levels` groups, the last group taking
    // the remainder, each spread over its bins that are non-empty in P.
    std::vector<double> q(static_cast<size_t>(i), 0.0);
    const int merged = i / levels;
    for (int j = 0; j < levels; ++j) {
      const int start = j * merged;
      const int stop = j == levels - 1 ? i : start + merged;
      double sum = 0;
      int nonzero = 0;
      for (int k = start; k < stop; ++k) {
        sum += counts[static_cast<size_t>(k)];
        nonzero += p[static_cast<size_t>(k)] != 0 ? 1 : 0;
      }
      if (nonzero == 0) continue;
      for (int k = start; k < stop; ++k)
        if (p[static_cast<size_t>(k)] != 0) q[static_cast<size_t>(k)] = sum / nonzero;
    }
    if (!smooth(p) || !smooth(q)) continue;
    const double kl = kl_divergence(p, q);
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return best * bin_width;
}

double percentile_threshold(const std::vector<double>& counts, double bin_width,
                            double percent) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (total == 0) return 0;
  const double want = total * percent / 100.0;
  double cum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cum += counts[i];
    if (cum >= want) return static_cast<double>(i + 1) * bin_width;
  }
  return static_cast<double>(counts.size()) * bin_width;
}

double mse_threshold(const std::vector<double>& counts, double bin_width, int levels) {
  const int bins = used_bins(counts);
  double best_err = std::numeric_limits<double>::infinity();
  int best = bins;
  for (int i = 1; i <= bins; ++i) {
    const double t = i * bin_width;
    const double step = t / levels;
    double err = 0;
    for (int b = 0; b < bins; ++b) {
      const double c = (b + 0.5) * bin_width;
      const double q = std::min(std::nearbyint(c / step), static_cast<double>(levels)) * step;
      err += counts[static_cast<size_t>(b)] * (c - q) * (c - q);
    }
    if (err < best_err) {
      best_err = err;
      best = i;
    }
  }
  return best * bin_width;
}

ActivationQuant activation_quant(const Histogram& h, Method m) {
  const double abs_max = h.abs_max();
  ActivationQuant a;
  if (abs_max == 0) return a;
  const double lo = std::min(h.min(), 0.0);
  const bool asymmetric = lo >= -abs_max / 4;
  // The steps over [0, T]: asymmetric grids spend most of their 255 steps on the positive side.
  const int levels =
      asymmetric ? static_cast<int>(std::clamp(std::lround(255 * abs_max / (abs_max - lo)), 128L, 255L))
                 : 127;
  double t = abs_max;
  switch (m) {
    case Method::kEntropy: t = entropy_threshold(h.counts(), h.bin_width(), levels); break;
    case Method::kPercentile: t = percentile_threshold(h.counts(), h.bin_width()); break;
    case Method::kMinMax: t = asymmetric ? h.max() : abs_max; break;
    case Method::kMse: t = mse_threshold(h.counts(), h.bin_width(), levels); break;
  }
  t = std::min(t, abs_max);
  if (!(t > 0)) t = abs_max;
  a.threshold = t;
  if (asymmetric) {
    const double low = std::max(lo, -t);
    if (!(t > low)) t = low + 1e-6;
    a.scale = static_cast<float>((t - low) / 255.0);
    a.zero_point = static_cast<int>(
        std::clamp(std::nearbyint(-128.0 - low / a.scale), -128.0, 127.0));
  } else {
    a.scale = static_cast<float>(t / 127.0);
  }
  return a;
}

}  // namespace yoloc::quant
