#pragma once
/// The JSON form of an image's detections (yoloc/detection.h), shared by `yoloc run` and
/// `yoloc eval`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "yoloc/detection.h"

namespace yoloc::detect {

/// {"image": path, "width": W, "height": H, "detections": [{"class_id": i, "class_name": s,
/// "score": f, "box": [x1, y1, x2, y2]}]}, boxes in image pixels.
nlohmann::json to_json(const ImageResult& result, const std::vector<std::string>& names);

/// A JSON array of to_json(result) in order.
nlohmann::json to_json(const std::vector<ImageResult>& results,
                       const std::vector<std::string>& names);

}  // namespace yoloc::detect
