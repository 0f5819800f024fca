#pragma once
/// Precision and recall at one confidence, as Ultralytics val reports them: each class's
/// precision and recall curves over confidence, and the confidence where the mean F1 over the
/// classes (smoothed) is highest.
#include <cstdint>
#include <vector>

namespace yoloc::detect {

/// One class's detections over a whole dataset: score and whether it matched a ground truth
/// (at IoU 0.5), in any order, with the class's ground-truth count.
struct ClassMatches {
  std::vector<float> scores;
  std::vector<bool> true_positive;
  int64_t num_gt = 0;
};

struct PrecisionRecall {
  std::vector<double> precision;  ///< per class, in the order given
  std::vector<double> recall;
  double confidence = 0;  ///< the confidence of the best mean F1
};

/// Ultralytics' ap_per_class: per class, detections by score descending give cumulative
/// precision tp / (tp + fp) and recall tp / num_gt; both are interpolated (np.interp) on 1000
/// confidences in [0, 1] (precision 1 and recall 0 above the highest score); F1 = 2PR / (P + R)
/// is averaged over the classes, smoothed by a 101-point box filter (edges repeated), and the
/// first maximum picks the confidence. A class without detections has P = R = 0 there.
PrecisionRecall best_f1_precision_recall(const std::vector<ClassMatches>& classes);

}  // namespace yoloc::detect
