#include "detect/nms.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace yoloc::detect {

std::vector<Detection> nms(std::vector<Detection> dets, float iou_threshold, int max_det) {
  // A NaN score would break the sort's ordering; it is no detection anyway.
  std::erase_if(dets, [](const Detection& d) { return std::isnan(d.score); });
  std::stable_sort(dets.begin(), dets.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  if (dets.size() > static_cast<size_t>(kMaxNmsCandidates)) dets.resize(kMaxNmsCandidates);
  std::vector<Detection> kept;
  std::map<int, std::vector<Box>> kept_by_class;
  for (const Detection& d : dets) {
    if (static_cast<int>(kept.size()) >= max_det) break;
    std::vector<Box>& same = kept_by_class[d.class_id];
    const bool suppressed = std::any_of(same.begin(), same.end(), [&](const Box& k) {
      return iou(k, d.box) > iou_threshold;
    });
    if (suppressed) continue;
    same.push_back(d.box);
    kept.push_back(d);
  }
  return kept;
}

}  // namespace yoloc::detect
