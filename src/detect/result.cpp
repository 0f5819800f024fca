#include "detect/result.h"

#include "detect/pipeline.h"

namespace yoloc::detect {

nlohmann::json to_json(const ImageResult& r, const std::vector<std::string>& names) {
  nlohmann::json dets = nlohmann::json::array();
  for (const Detection& d : r.detections)
    dets.push_back({{"class_id", d.class_id},
                    {"class_name", class_name(names, d.class_id)},
                    {"score", d.score},
                    {"box", {d.box.x1, d.box.y1, d.box.x2, d.box.y2}}});
  return {{"image", r.image}, {"width", r.width}, {"height", r.height}, {"detections", dets}};
}

nlohmann::json to_json(const std::vector<ImageResult>& results,
                       const std::vector<std::string>& names) {
  nlohmann::json list = nlohmann::json::array();
  for (const ImageResult& r : results) list.push_back(to_json(r, names));
  return list;
}

}  // namespace yoloc::detect
