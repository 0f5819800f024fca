#include "detect/pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "detect/nms.h"

namespace yoloc::detect {

Detector::Detector(NetworkFn network, DetectorConfig config)
    : network_(std::move(network)), config_(config) {
  YOLOC_CHECK(static_cast<bool>(network_), "Detector needs a network");
  if (config_.input_w <= 0 || config_.input_h <= 0)
    user_error("the network input size {}x{} must be positive", config_.input_w, config_.input_h);
  if (config_.input_dtype != DType::kFloat32 && config_.input_dtype != DType::kFloat16)
    user_error("the model's image input has element type {}; expected float32 or float16",
               dtype_name(config_.input_dtype));
  if (!(config_.conf >= 0 && config_.conf <= 1))
    user_error("the confidence threshold {} must be in [0, 1]", config_.conf);
  if (!(config_.iou >= 0 && config_.iou <= 1))
    user_error("the NMS IoU threshold {} must be in [0, 1]", config_.iou);
  if (config_.max_det <= 0) user_error("max_det {} must be positive", config_.max_det);
}

Preprocessed Detector::preprocess(const Image& img) const {
  if (config_.family == Family::kYoloX)
    return preprocess_yolox(img, config_.input_w, config_.input_h, config_.input_dtype);
  return preprocess_ultralytics(img, config_.input_w, config_.input_h, config_.input_dtype);
}

std::vector<Detection> Detector::postprocess(const Tensor& head, const BoxTransform& transform,
                                             int img_w, int img_h) const {
  std::vector<Detection> dets =
      decode_head(config_.family, head, config_.conf, config_.input_w, config_.input_h);
  if (config_.family == Family::kYoloV10) {
    // Already one box per object; only order and cap, as Ultralytics does.
    std::stable_sort(dets.begin(), dets.end(),
                     [](const Detection& a, const Detection& b) { return a.score > b.score; });
    if (dets.size() > static_cast<size_t>(config_.max_det)) dets.resize(config_.max_det);
  } else {
    dets = nms(std::move(dets), config_.iou, config_.max_det);
  }
  map_to_image(dets, transform, img_w, img_h);
  return dets;
}

Detector::Detector(NetworkFn network, ImageFn pipeline, DetectorConfig config)
    : Detector(std::move(network), config) {
  pipeline_ = std::move(pipeline);
}

std::vector<Detection> Detector::detect(const Image& img) const {
  if (pipeline_) return pipeline_(img);
  const Preprocessed p = preprocess(img);
  const std::vector<Tensor> outputs = network_(p.input);
  if (outputs.empty()) user_error("the network returned no outputs; expected the detection head");
  return postprocess(outputs[0], p.transform, img.width, img.height);
}

std::string class_name(const std::vector<std::string>& names, int id) {
  if (id >= 0 && static_cast<size_t>(id) < names.size()) return names[static_cast<size_t>(id)];
  return "class" + std::to_string(id);
}

}  // namespace yoloc::detect
