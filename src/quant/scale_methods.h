#pragma once
/// The four ways calibration turns an activation's histogram of |x| into a clipping threshold,
/// and the int8 scale and zero point that follow.
#include <string>
#include <string_view>
#include <vector>

#include "quant/histogram.h"

namespace yoloc::quant {

enum class Method { kEntropy, kPercentile, kMinMax, kMse };

/// "entropy", "percentile", "minmax", "mse"; raises a UserError naming the choices otherwise.
Method parse_method(const std::string& name);
std::string_view method_name(Method m);

/// TensorRT's entropy calibration: for each candidate i >= levels bins, P = the first i bins with
/// the mass beyond them added to bin i-1, Q = the first i bins merged into `levels` groups and
/// spread back uniformly over each group's non-empty bins; both smoothed (eps 1e-4, taken from
/// the non-empty bins) and normalised; the threshold is i * bin_width for the i of least
/// KL(P || Q). Fewer than `levels` bins in use: the range itself.
double entropy_threshold(const std::vector<double>& counts, double bin_width, int levels = 128);

/// The upper edge of the first bin where the cumulative share reaches `percent`.
double percentile_threshold(const std::vector<double>& counts, double bin_width,
                            double percent = 99.99);

/// The threshold T (a bin edge) of least squared error sum_b counts[b] * (c_b - fq(c_b))^2 over
/// the bin centres c_b, where fq rounds to the grid of `levels` steps over [0, T] and clamps at
/// T.
double mse_threshold(const std::vector<double>& counts, double bin_width, int levels = 127);

/// How an activation is quantized to int8: q = clamp(round(x / scale) + zero_point, -128, 127).
struct ActivationQuant {
  float scale = 1.0f;
  int zero_point = 0;
  double threshold = 0;  ///< the clipping threshold on |x| the method chose
};

/// The method's threshold T on the histogram, then: an activation that is never much below 0
/// (min >= -T / 4: after SiLU, ReLU, an image) takes the asymmetric grid [min(min, 0), T] in 256
/// steps (zero point), else the symmetric [-T, T] in 255 (zero point 0). T never exceeds the
/// largest |x| seen; an all-zero activation gets scale 1.
ActivationQuant activation_quant(const Histogram& h, Method m);

}  // namespace yoloc::quant
