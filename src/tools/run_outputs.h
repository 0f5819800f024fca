#pragma once
/// What `yoloc run` writes besides annotated images: the detections as JSON in one of three
/// shapes, and YOLO label files.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detect/result.h"

namespace yoloc::tools {

/// --format yoloc: detect::to_json's list of {"image", "width", "height", "detections"}.
/// --format ultralytics: a list of {"image": path, "detections": [...]} where each detection is
///   Ultralytics' Results.summary() entry: {"name", "class", "confidence", "box": {"x1", "y1",
///   "x2", "y2"}}.
/// --format coco: the COCO results list [{"image_id", "category_id", "bbox": [x, y, w, h],
///   "score"}]: image_id is the file stem as a number when it is one (COCO's file names), else
///   the image's index in the run; category_id is COCO's 91-class id for a model with the 80
///   COCO names (as Ultralytics' coco80_to_coco91 maps it), else the class id.
/// Raises a UserError for another format.
nlohmann::json results_json(const std::vector<detect::ImageResult>& results,
                            const std::vector<std::string>& names, const std::string& format);

/// The YOLO label text of one image: "class cx cy w h" per detection, normalised by the image
/// size (6 decimals), with " conf" appended when `with_conf`.
std::string yolo_label_text(const detect::ImageResult& result, bool with_conf);

}  // namespace yoloc::tools
