#pragma once
/// The 80 COCO class names in the contiguous 0-79 (Ultralytics / Darknet) order.
#include <string>
#include <vector>

namespace yoloc::detect {

/// Class i of a COCO-80 detector is coco_names()[i].
const std::vector<std::string>& coco_names();

}  // namespace yoloc::detect
