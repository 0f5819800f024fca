#pragma once
/// The figures of a detector on a labelled dataset: COCO mAP, precision and recall, per class.
#include <cstdint>
#include <vector>

#include "yoloc/detection.h"

namespace yoloc::detect {

/// The figures of one class with ground truth.
struct ClassMetrics {
  int class_id = 0;
  int images = 0;         ///< images holding at least one of its ground-truth boxes
  int64_t instances = 0;  ///< its ground-truth boxes
  double precision = 0;   ///< at the confidence of the best mean F1 (Ultralytics')
  double recall = 0;
  double map50 = 0;  ///< AP at IoU 0.50
  double map50_95 = 0;
};

struct MapResult {
  double map50 = 0;     ///< AP at IoU 0.50, averaged over classes
  double map50_95 = 0;  ///< AP averaged over IoU 0.50:0.05:0.95 and classes
  int classes = 0;      ///< classes present in the ground truth (those averaged over)
  double precision = 0;  ///< per-class precision at the best mean F1, averaged over classes
  double recall = 0;     ///< the same for recall
  int images = 0;         ///< images evaluated
  int64_t instances = 0;  ///< ground-truth boxes
  std::vector<ClassMetrics> per_class;  ///< by class id
};

struct EvalReport {
  MapResult map;
  std::vector<ImageResult> results;  ///< per image: the detections that were evaluated
};

}  // namespace yoloc::detect
