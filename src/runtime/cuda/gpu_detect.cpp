#include "runtime/cuda/gpu_detect.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace yoloc::runtime::cuda {

FramePlacement frame_placement(detect::Family family, int img_w, int img_h, int input_w,
                               int input_h) {
  FramePlacement p;
  if (family == detect::Family::kYoloX) {
    // As detect::preprocess_yolox: r = min(dst / src), int() truncation, paste at (0, 0).
    if (img_w <= 0 || img_h <= 0 || input_w <= 0 || input_h <= 0)
      user_error("YOLOX pre-processing: image {}x{} or input {}x{} is empty", img_w, img_h, input_w,
                 input_h);
    const double r =
        std::min(static_cast<double>(input_h) / img_h, static_cast<double>(input_w) / img_w);
    p.new_w = std::clamp(static_cast<int>(img_w * r), 1, input_w);
    p.new_h = std::clamp(static_cast<int>(img_h * r), 1, input_h);
    p.transform = {r, 0.0, 0.0};
    return p;
  }
  const detect::LetterboxGeometry g = detect::letterbox_geometry(img_w, img_h, input_w, input_h);
  p.new_w = g.new_w;
  p.new_h = g.new_h;
  p.left = g.left;
  p.top = g.top;
  p.transform = {g.scale, static_cast<double>(g.left), static_cast<double>(g.top)};
  return p;
}

GpuDetect::GpuDetect(const Module& module, GpuDetectSpec spec, CUdeviceptr network_input,
                     CUdeviceptr head_output, int capacity_w, int capacity_h, FrameSource source)
    : spec_(std::move(spec)),
      input_(network_input),
      head_(head_output),
      capacity_w_(capacity_w),
      capacity_h_(capacity_h),
      source_(source),
      params_host_(sizeof(YcDetectParams) + sizeof(YcImageParams) * std::max(spec_.batch, 1)),
      params_dev_(params_host_.bytes()),
      frames_host_(capacity_w > 0 && capacity_h > 0
                       ? static_cast<size_t>(capacity_w) * 3 * capacity_h * std::max(spec_.batch, 1)
                       : 0),
      frames_dev_(source == FrameSource::kDeviceCopy ? frames_host_.bytes() : 0),
      workspace_(spec_.workspace_bytes),
      result_dev_(spec_.result_bytes),
      result_host_(spec_.result_bytes),
      frames_(static_cast<size_t>(std::max(spec_.batch, 1))) {
  if (capacity_w <= 0 || capacity_h <= 0)
    user_error("GPU pre-processing: the frame capacity {}x{} must be positive", capacity_w,
               capacity_h);
  YOLOC_CHECK(spec_.batch >= 1 && spec_.max_det_cap >= 1 &&
                  spec_.result_bytes >= spec_.result_dets_offset +
                                            sizeof(YcDetection) * spec_.batch * spec_.max_det_cap,
              "bad GpuDetectSpec (batch {}, max_det_cap {}, result {} bytes)", spec_.batch,
              spec_.max_det_cap, spec_.result_bytes);
  pre_fn_ = module.function(spec_.pre.symbol);
  decode_fn_ = module.function(spec_.decode.symbol);
  rank_fn_ = module.function(spec_.rank.symbol);
  nms_fn_ = module.function(spec_.nms.symbol);
  // The kernels keep the workspace's candidate counters at zero between runs (NMS resets them).
  workspace_.fill_bytes(0);
  result_dev_.fill_bytes(0);
  std::memset(params_host_.data(), 0, params_host_.bytes());
  std::memset(result_host_.data(), 0, result_host_.bytes());
  std::memset(frames_host_.data(), 0, frames_host_.bytes());
  set_thresholds(0.25f, 0.45f, std::min(300, spec_.max_det_cap));
  // Until a frame is set, each item is a 1x1 black frame (the kernels never read outside it).
  for (int b = 0; b < spec_.batch; ++b) set_frame_size(b, 1, 1);
}

YcDetectParams& GpuDetect::params() const {
  return *static_cast<YcDetectParams*>(params_host_.data());
}

YcImageParams& GpuDetect::image_params(int b) const {
  return reinterpret_cast<YcImageParams*>(static_cast<uint8_t*>(params_host_.data()) +
                                          sizeof(YcDetectParams))[b];
}

void GpuDetect::check_item(int b, const char* what) const {
  if (b < 0 || b >= spec_.batch)
    user_error("GPU detection: {} of batch item {}, but the batch has {} item(s)", what, b,
               spec_.batch);
}

void GpuDetect::set_thresholds(float conf, float iou, int max_det) {
  if (!(conf >= 0 && conf <= 1)) user_error("the confidence threshold {} must be in [0, 1]", conf);
  if (!(iou >= 0 && iou <= 1)) user_error("the NMS IoU threshold {} must be in [0, 1]", iou);
  if (max_det < 1 || max_det > spec_.max_det_cap)
    user_error("max_det {} must be in [1, {}] (the most the GPU post-processing was compiled for)",
               max_det, spec_.max_det_cap);
  YcDetectParams& p = params();
  p.conf = conf;
  p.iou = iou;
  p.max_det = max_det;
}

uint8_t* GpuDetect::frame_staging(int b) {
  check_item(b, "frame staging");
  return static_cast<uint8_t*>(frames_host_.data()) +
         frame_pitch() * static_cast<size_t>(capacity_h_) * b;
}

void GpuDetect::set_frame_size(int b, int img_w, int img_h) {
  check_item(b, "frame size");
  if (img_w <= 0 || img_h <= 0 || img_w > capacity_w_ || img_h > capacity_h_)
    user_error(
        "GPU pre-processing: a frame of {}x{} does not fit the capacity {}x{}; give a "
        "larger capacity",
        img_w, img_h, capacity_w_, capacity_h_);
  const FramePlacement p =
      frame_placement(spec_.family, img_w, img_h, spec_.input_w, spec_.input_h);
  YcImageParams& g = image_params(b);
  g.src_offset = static_cast<long long>(frame_pitch() * static_cast<size_t>(capacity_h_) * b);
  g.src_w = img_w;
  g.src_h = img_h;
  g.src_pitch = static_cast<int>(frame_pitch());
  g.new_w = p.new_w;
  g.new_h = p.new_h;
  g.left = p.left;
  g.top = p.top;
  g.reserved = 0;
  frames_[static_cast<size_t>(b)] = {img_w, img_h, p.transform};
}

void GpuDetect::set_frame(int b, const detect::Image& img) {
  check_item(b, "frame");
  if (img.empty()) user_error("GPU pre-processing: the image of batch item {} is empty", b);
  set_frame_size(b, img.width, img.height);
  uint8_t* dst = frame_staging(b);
  const size_t row = static_cast<size_t>(img.width) * 3;
  for (int y = 0; y < img.height; ++y)
    std::memcpy(dst + frame_pitch() * static_cast<size_t>(y), img.pixel(0, y), row);
}

void GpuDetect::enqueue_preprocess(const Stream& stream) const {
  const DriverApi& api = driver();
  // The frames' geometry (the thresholds go up with the post-processing).
  const size_t skip = sizeof(YcDetectParams);
  check(&api,
        api.cuMemcpyHtoDAsync(params_dev_.ptr() + skip,
                              static_cast<const uint8_t*>(params_host_.data()) + skip,
                              params_host_.bytes() - skip, stream.get()),
        "cuMemcpyHtoDAsync(image params)");
  CUdeviceptr frames = 0;
  if (source_ == FrameSource::kDeviceCopy) {
    check(&api,
          api.cuMemcpyHtoDAsync(frames_dev_.ptr(), frames_host_.data(), frames_host_.bytes(),
                                stream.get()),
          "cuMemcpyHtoDAsync(frames)");
    frames = frames_dev_.ptr();
  } else {
    // Pinned memory is mapped at the same address on the device (unified addressing).
    frames = reinterpret_cast<CUdeviceptr>(frames_host_.data());
  }
  CUdeviceptr images = params_dev_.ptr() + sizeof(YcDetectParams);
  CUdeviceptr input = input_;
  void* args[] = {&frames, &images, &input};
  launch(pre_fn_, spec_.pre.dims, args, &stream);
}

void GpuDetect::enqueue_postprocess(const Stream& stream) const {
  const DriverApi& api = driver();
  check(&api,
        api.cuMemcpyHtoDAsync(params_dev_.ptr(), params_host_.data(), sizeof(YcDetectParams),
                              stream.get()),
        "cuMemcpyHtoDAsync(detection params)");
  CUdeviceptr head = head_, params = params_dev_.ptr(), ws = workspace_.ptr(),
              result = result_dev_.ptr();
  void* decode_args[] = {&head, &params, &ws};
  launch(decode_fn_, spec_.decode.dims, decode_args, &stream);
  void* rank_args[] = {&ws};
  launch(rank_fn_, spec_.rank.dims, rank_args, &stream);
  void* nms_args[] = {&params, &ws, &result};
  launch(nms_fn_, spec_.nms.dims, nms_args, &stream);
  check(&api,
        api.cuMemcpyDtoHAsync(result_host_.data(), result, result_host_.bytes(), stream.get()),
        "cuMemcpyDtoHAsync(detections)");
}

std::vector<detect::Detection> GpuDetect::raw_detections(int b) const {
  check_item(b, "detections");
  const auto* base = static_cast<const uint8_t*>(result_host_.data());
  const int count = std::clamp(reinterpret_cast<const int*>(base)[b], 0, spec_.max_det_cap);
  const auto* dets = reinterpret_cast<const YcDetection*>(base + spec_.result_dets_offset) +
                     static_cast<size_t>(b) * spec_.max_det_cap;
  std::vector<detect::Detection> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const YcDetection& d = dets[i];
    out[static_cast<size_t>(i)] = {{d.x1, d.y1, d.x2, d.y2}, d.score, d.class_id};
  }
  return out;
}

std::vector<detect::Detection> GpuDetect::detections(int b) const {
  std::vector<detect::Detection> dets = raw_detections(b);
  const FrameInfo& f = frames_[static_cast<size_t>(b)];
  detect::map_to_image(dets, f.transform, f.w, f.h);
  return dets;
}

}  // namespace yoloc::runtime::cuda
