#include "tools/run_outputs.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.h"
#include "detect/coco_names.h"
#include "detect/pipeline.h"

namespace yoloc::tools {

namespace {

/// COCO's category ids of the 80 detection classes (the paper's 91 ids with 11 unused).
constexpr int kCoco91[80] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17,
                             18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36,
                             37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53,
                             54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73,
                             74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};

nlohmann::json ultralytics_json(const std::vector<detect::ImageResult>& results,
                                const std::vector<std::string>& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const detect::ImageResult& r : results) {
    nlohmann::json dets = nlohmann::json::array();
    for (const detect::Detection& d : r.detections)
      dets.push_back({{"name", detect::class_name(names, d.class_id)},
                      {"class", d.class_id},
                      {"confidence", d.score},
                      {"box", {{"x1", d.box.x1}, {"y1", d.box.y1}, {"x2", d.box.x2},
                               {"y2", d.box.y2}}}});
    out.push_back({{"image", r.image}, {"detections", dets}});
  }
  return out;
}

nlohmann::json coco_json(const std::vector<detect::ImageResult>& results,
                         const std::vector<std::string>& names) {
  const bool coco80 = names == detect::coco_names();
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const detect::ImageResult& r = results[i];
    const std::string stem = std::filesystem::path(r.image).stem().string();
    const bool numeric = !stem.empty() && stem.size() < 16 &&
                         stem.find_first_not_of("0123456789") == std::string::npos;
    const int64_t image_id = numeric ? std::stoll(stem) : static_cast<int64_t>(i);
    for (const detect::Detection& d : r.detections) {
      const bool mapped = coco80 && d.class_id >= 0 && d.class_id < 80;
      out.push_back({{"image_id", image_id},
                     {"category_id", mapped ? kCoco91[d.class_id] : d.class_id},
                     {"bbox", {d.box.x1, d.box.y1, d.box.x2 - d.box.x1, d.box.y2 - d.box.y1}},
                     {"score", d.score}});
    }
  }
  return out;
}

}  // namespace

nlohmann::json results_json(const std::vector<detect::ImageResult>& results,
                            const std::vector<std::string>& names, const std::string& format) {
  if (format == "yoloc") return detect::to_json(results, names);
  if (format == "ultralytics") return ultralytics_json(results, names);
  if (format == "coco") return coco_json(results, names);
  user_error("--format {}: choose yoloc, ultralytics or coco", format);
}

std::string yolo_label_text(const detect::ImageResult& r, bool with_conf) {
  std::string out;
  const double w = r.width, h = r.height;
  for (const detect::Detection& d : r.detections) {
    out += fmt::format("{} {:.6f} {:.6f} {:.6f} {:.6f}", d.class_id, (d.box.x1 + d.box.x2) / 2 / w,
                       (d.box.y1 + d.box.y2) / 2 / h, (d.box.x2 - d.box.x1) / w,
                       (d.box.y2 - d.box.y1) / h);
    if (with_conf) out += fmt::format(" {:.6f}", d.score);
    out += "\n";
  }
  return out;
}

}  // namespace yoloc::tools
