#pragma once
/// COCO-style box mAP of a detector on a folder of images with YOLO-format labels.
#include <filesystem>
#include <string>
#include <vector>

#include "detect/decode.h"
#include "detect/pipeline.h"
#include "detect/result.h"
#include "yoloc/evaluation.h"

namespace yoloc::detect {

/// Evaluation protocol (Ultralytics val): low threshold, NMS IoU 0.7, at most 300 boxes.
constexpr float kEvalConf = 0.001f;
constexpr float kEvalIou = 0.7f;
constexpr int kEvalMaxDet = 300;

struct GroundTruth {
  Box box;  ///< image pixels
  int class_id = 0;
};

/// Detections and ground truth of one image.
struct ImageEval {
  std::vector<Detection> detections;
  std::vector<GroundTruth> ground_truth;
};

/// COCO box AP (pycocotools' evaluateImg + accumulate with area "all" and maxDets 300): per
/// image and class, detections by score descending each match the unmatched ground truth of
/// their class with the highest IoU >= t; per class, 101-point interpolated precision over all
/// images; the mean over the classes that have ground truth. Classes with ground truth but no
/// detections count as AP 0; no ground truth at all gives 0. Precision and recall: Ultralytics'
/// (best_f1.h) over the detections matched at IoU 0.5 as above.
MapResult compute_map(const std::vector<ImageEval>& images);

/// Reads a YOLO label file ("class cx cy w h" per line, normalised to the image size) into
/// boxes in pixels of a width x height image. Raises a UserError naming the file and line for
/// a malformed line.
std::vector<GroundTruth> read_yolo_labels(const std::string& path, int width, int height);

/// True for the image files datasets take: .jpg, .jpeg, .png, .bmp (any case).
bool is_image_file(const std::filesystem::path& p);

/// One image of a dataset and its label file (which may not exist: no objects).
struct Sample {
  std::string image;
  std::string labels;
};

/// The images (.jpg, .jpeg, .png, .bmp, sorted by name) of DIR/images with their
/// DIR/labels/<stem>.txt. Raises a UserError when DIR/images is missing or has no image.
std::vector<Sample> list_dataset(const std::string& dir);


/// Runs `detector` over the dataset in `dir` (config().batch images a run) and computes the
/// mAP. With `progress`, an updating counter is drawn on stderr when stderr is a terminal.
EvalReport evaluate_dataset(const Detector& detector, const std::string& dir, bool progress);

}  // namespace yoloc::detect
