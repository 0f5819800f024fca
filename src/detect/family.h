#pragma once
/// Model families (which head, which pre-processing) and the Ultralytics export metadata:
/// family detection, class names and the export image size.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "yoloc/tensor.h"

namespace yoloc::detect {

/// The detection head a model ends in; it decides pre-processing and decoding.
enum class Family {
  kYoloV5,   ///< (B, N, 5 + C): cx, cy, w, h, objectness, class scores; letterbox input
  kYoloV8,   ///< (B, 4 + C, N): cx, cy, w, h, class scores (YOLOv8, YOLO11, v5u); letterbox
  kYoloV10,  ///< (B, K, 6): x1, y1, x2, y2, score, class; end-to-end, no NMS; letterbox
  kYoloX,    ///< (B, N, 5 + C) raw grid outputs (Megvii YOLOX); top-left paste, 0..255 BGR
};

/// The model's metadata_props (key -> value).
using Metadata = std::map<std::string, std::string>;

/// "yolov5", "yolov8", "yolov10" or "yolox".
std::string_view family_name(Family f);

/// Parses a --family value: yolov5, yolov8, yolo11 (or yolov11), yolov10, yolox, any case.
/// Raises a UserError listing the accepted names otherwise.
Family parse_family(std::string_view name);

/// Tells the family from the metadata (Ultralytics keys "author", "description", "end2end",
/// "head", "task", "stride", "names") and the first output's shape (-1 for an unknown dim).
/// Raises a UserError when the model cannot be told apart (exports without metadata, like
/// YOLOv5 and YOLOX ones) naming `--family`, or when the task is not detection.
Family detect_family(const Metadata& metadata, const Shape& output_shape);
/// The same, but std::nullopt (no error) when the family cannot be told; still a UserError when
/// the task is not detection.
std::optional<Family> try_detect_family(const Metadata& metadata, const Shape& output_shape);

/// Parses a Python literal of class names: a dict "{0: 'person', 1: 'bicycle'}" (keys 0..n-1 in
/// any order) or a list "['person', 'bicycle']". Raises a UserError on anything else.
std::vector<std::string> parse_names(const std::string& literal);

/// The class names for a model with `num_classes` classes (-1: unknown): metadata "names" when
/// present, else the COCO names when num_classes is 80 or unknown, else "class0", "class1", ...
std::vector<std::string> class_names(const Metadata& metadata, int64_t num_classes);

/// The export size from metadata "imgsz" ("[640, 640]" as [h, w], or "640") as (height,
/// width), or nullopt when absent or unparsable.
std::optional<std::pair<int, int>> metadata_imgsz(const Metadata& metadata);

}  // namespace yoloc::detect
