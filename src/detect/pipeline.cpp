#include "detect/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstring>

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
  if (config_.batch <= 0) user_error("the network batch {} must be positive", config_.batch);
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Batch item `item` of `t` as a tensor whose first dimension is 1 (`t` itself for a batch of
/// one).
Tensor batch_item(const Tensor& t, int item) {
  if (t.rank() == 0 || t.dim(0) == 1) return t;
  if (item >= t.dim(0))
    user_error("the network's head has batch {}, expected at least {}", t.dim(0), item + 1);
  Shape shape = t.shape();
  shape[0] = 1;
  Tensor out(t.dtype(), shape);
  std::memcpy(out.raw(), static_cast<const uint8_t*>(t.raw()) + out.nbytes() * item,
              out.nbytes());
  return out;
}

}  // namespace

Preprocessed Detector::preprocess(const Image& img) const {
  if (config_.family == Family::kYoloX)
    return preprocess_yolox(img, config_.input_w, config_.input_h, config_.input_dtype);
  return preprocess_ultralytics(img, config_.input_w, config_.input_h, config_.input_dtype);
}

std::vector<Detection> Detector::postprocess(const Tensor& head, const BoxTransform& transform,
                                             int img_w, int img_h, int item) const {
  std::vector<Detection> dets = decode_head(config_.family, batch_item(head, item), config_.conf,
                                            config_.input_w, config_.input_h);
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
  return detect(std::vector<Image>{img})[0];
}

std::vector<std::vector<Detection>> Detector::detect(const std::vector<Image>& images,
                                                     StageTimes* times) const {
  StageTimes t;
  std::vector<std::vector<Detection>> out;
  out.reserve(images.size());
  const size_t batch = static_cast<size_t>(config_.batch);
  for (size_t first = 0; first < images.size(); first += batch) {
    const size_t n = std::min(batch, images.size() - first);
    auto t0 = std::chrono::steady_clock::now();
    if (pipeline_) {
      for (size_t i = 0; i < n; ++i) out.push_back(pipeline_(images[first + i]));
      t.inference_ms += ms_since(t0);
      continue;
    }
    // One Bx3xHxW input; the items past the last image stay zero.
    Tensor input(config_.input_dtype, {config_.batch, 3, config_.input_h, config_.input_w});
    std::vector<BoxTransform> transforms(n);
    for (size_t i = 0; i < n; ++i) {
      const Preprocessed p = preprocess(images[first + i]);
      transforms[i] = p.transform;
      std::memcpy(static_cast<uint8_t*>(input.raw()) + i * p.input.nbytes(), p.input.raw(),
                  p.input.nbytes());
    }
    t.preprocess_ms += ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    const std::vector<Tensor> outputs = network_(input);
    t.inference_ms += ms_since(t0);
    if (outputs.empty())
      user_error("the network returned no outputs; expected the detection head");
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      const Image& img = images[first + i];
      out.push_back(postprocess(outputs[0], transforms[i], img.width, img.height,
                                static_cast<int>(i)));
    }
    t.postprocess_ms += ms_since(t0);
  }
  if (times) *times = t;
  return out;
}

std::string class_name(const std::vector<std::string>& names, int id) {
  if (id >= 0 && static_cast<size_t>(id) < names.size()) return names[static_cast<size_t>(id)];
  return "class" + std::to_string(id);
}

}  // namespace yoloc::detect
