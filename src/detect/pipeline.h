#pragma once
/// The detector: image -> pre-processing -> network -> decoding -> NMS -> boxes on the image.
/// The network is an abstract callable, so the reference executor and a compiled runtime plug
/// in alike.
#include <functional>
#include <string>
#include <vector>

#include "yoloc/tensor.h"
#include "detect/decode.h"
#include "detect/family.h"
#include "yoloc/image.h"
#include "detect/preprocess.h"

namespace yoloc::detect {

/// Runs the network on one Bx3xHxW input (B: DetectorConfig::batch) and returns its outputs;
/// the first is the head.
using NetworkFn = std::function<std::vector<Tensor>(const Tensor& input)>;
/// Runs the whole pipeline on one image (an engine that pre- and post-processes on its device):
/// detections in image pixels, by score descending.
using ImageFn = std::function<std::vector<Detection>(const Image& img)>;

struct DetectorConfig {
  Family family = Family::kYoloV8;
  int input_w = 640;  ///< network input width and height
  int input_h = 640;
  DType input_dtype = DType::kFloat32;  ///< float32 or float16
  float conf = 0.25f;                   ///< score threshold
  float iou = 0.45f;                    ///< NMS IoU threshold (unused for end-to-end heads)
  int max_det = 300;                    ///< most detections per image
  int batch = 1;                        ///< images per network run (the input's first dim)
};

/// Where a batch of detections spent its time, in milliseconds, summed over the batch.
struct StageTimes {
  double preprocess_ms = 0;
  double inference_ms = 0;
  double postprocess_ms = 0;
};

class Detector {
 public:
  /// Raises a UserError for a non-positive input size, an input dtype other than float32 /
  /// float16, or thresholds outside [0, 1].
  Detector(NetworkFn network, DetectorConfig config);
  /// A detector whose detect() is `pipeline` (which must follow `config`'s family and
  /// thresholds); preprocess() and postprocess() still work on the host.
  Detector(NetworkFn network, ImageFn pipeline, DetectorConfig config);

  /// Detections on `img`, in image pixels, by score descending. A batch-N network runs the
  /// image padded to N with blank inputs.
  std::vector<Detection> detect(const Image& img) const;

  /// Detections on each of `images`: pre-processes up to config().batch images, runs the
  /// network once per batch (the last one padded with blank inputs) and decodes each item.
  /// With a whole-pipeline detector (see the constructor), the images go one by one. `times`,
  /// when not null, receives the time of each stage summed over the images.
  std::vector<std::vector<Detection>> detect(const std::vector<Image>& images,
                                             StageTimes* times = nullptr) const;

  /// The family's pre-processing of `img` into a network input.
  Preprocessed preprocess(const Image& img) const;

  /// Decoding of batch item `item` of a head output, NMS (except for end-to-end heads) and
  /// mapping back onto an image of img_w x img_h.
  std::vector<Detection> postprocess(const Tensor& head, const BoxTransform& transform,
                                     int img_w, int img_h, int item = 0) const;

  const DetectorConfig& config() const { return config_; }

 private:
  NetworkFn network_;
  ImageFn pipeline_;
  DetectorConfig config_;
};

/// names[id], or "class<id>" when the id is outside the names.
std::string class_name(const std::vector<std::string>& names, int id);

}  // namespace yoloc::detect
