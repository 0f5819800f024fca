#include "detect/best_f1.h"

#include <algorithm>
#include <numeric>

namespace yoloc::detect {

namespace {

constexpr int kPoints = 1000;  ///< np.linspace(0, 1, 1000)
constexpr double kEps = 1e-16;

/// np.interp(x, xp, fp, left=left): xp ascending; fp[-1] right of the last point.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp,
              double left) {
  if (xp.empty() || x < xp.front()) return left;
  const size_t j = static_cast<size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j + 1 >= xp.size()) return fp.back();
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  return fp[j] + slope * (x - xp[j]);
}

/// Ultralytics' smooth(y, 0.1): a box filter of 101 points with the ends repeated.
std::vector<double> smooth(const std::vector<double>& y) {
  const int nf = 101, half = nf / 2;
  std::vector<double> padded(half, y.front());
  padded.insert(padded.end(), y.begin(), y.end());
  padded.insert(padded.end(), half, y.back());
  std::vector<double> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    double s = 0;
    for (int k = 0; k < nf; ++k) s += padded[i + k];
    out[i] = s / nf;
  }
  return out;
}

}  // namespace

PrecisionRecall best_f1_precision_recall(const std::vector<ClassMatches>& classes) {
  const size_t nc = classes.size();
  std::vector<double> x(kPoints);
  for (int k = 0; k < kPoints; ++k) x[k] = k == kPoints - 1 ? 1.0 : k * (1.0 / (kPoints - 1));
  std::vector<std::vector<double>> p_curve(nc, std::vector<double>(kPoints, 0.0));
  std::vector<std::vector<double>> r_curve = p_curve;
  for (size_t c = 0; c < nc; ++c) {
    const ClassMatches& m = classes[c];
    if (m.scores.empty() || m.num_gt == 0) continue;
    std::vector<size_t> order(m.scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return m.scores[a] > m.scores[b]; });
    // As functions of -score, which ascends.
    std::vector<double> neg_conf, precision, recall;
    double tp = 0, fp = 0;
    for (size_t i : order) {
      (m.true_positive[i] ? tp : fp) += 1;
      neg_conf.push_back(-static_cast<double>(m.scores[i]));
      recall.push_back(tp / (static_cast<double>(m.num_gt) + kEps));
      precision.push_back(tp / (tp + fp));
    }
    for (int k = 0; k < kPoints; ++k) {
      r_curve[c][k] = interp(-x[k], neg_conf, recall, 0.0);
      p_curve[c][k] = interp(-x[k], neg_conf, precision, 1.0);
    }
  }
  PrecisionRecall out;
  out.precision.assign(nc, 0.0);
  out.recall.assign(nc, 0.0);
  if (nc == 0) return out;
  std::vector<double> mean_f1(kPoints, 0.0);
  for (size_t c = 0; c < nc; ++c)
    for (int k = 0; k < kPoints; ++k) {
      const double p = p_curve[c][k], r = r_curve[c][k];
      mean_f1[k] += 2 * p * r / (p + r + kEps) / static_cast<double>(nc);
    }
  const std::vector<double> smoothed = smooth(mean_f1);
  const size_t best =
      static_cast<size_t>(std::max_element(smoothed.begin(), smoothed.end()) - smoothed.begin());
  for (size_t c = 0; c < nc; ++c) {
    out.precision[c] = p_curve[c][best];
    out.recall[c] = r_curve[c][best];
  }
  out.confidence = x[best];
  return out;
}

}  // namespace yoloc::detect
