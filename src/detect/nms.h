#pragma once
/// Non-maximum suppression.
#include <vector>

#include "detect/decode.h"

namespace yoloc::detect {

/// Ultralytics caps the candidates entering NMS at the 30000 best (max_nms).
constexpr int kMaxNmsCandidates = 30000;

/// Class-wise NMS: candidates sorted by score, descending (stable: equal scores keep their
/// order), the best kMaxNmsCandidates kept; a box is dropped when its IoU with a kept box of the
/// same class is > iou_threshold. Returns at most `max_det` boxes, by score descending.
std::vector<Detection> nms(std::vector<Detection> dets, float iou_threshold, int max_det);

}  // namespace yoloc::detect
