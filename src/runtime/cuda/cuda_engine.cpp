#include "runtime/cuda/cuda_engine.h"

#include <fmt/format.h>

#include <span>

#include "core/error.h"
#include "runtime/cuda/cuda_program.h"

namespace yoloc::runtime::cuda {

CudaEngine::CudaEngine(std::shared_ptr<const artifact::Artifact> a, int device, int in_flight)
    : exec_(std::move(a), device), in_flight_(in_flight) {
  if (in_flight < 1) user_error("{} images in flight: at least 1 is needed", in_flight);
}

std::vector<detect::Detection> CudaEngine::detect(const detect::Image& img, float conf, float iou,
                                                  int max_det) {
  if (pipeline_) pipeline_->drain();  // the first lane is exec_ itself
  return exec_.detect(std::span(&img, 1), conf, iou, max_det).at(0);
}

uint64_t CudaEngine::submit(const detect::Image& img, float conf, float iou, int max_det) {
  if (!pipeline_) pipeline_ = std::make_unique<PipelinedDetect>(exec_, in_flight_);
  return pipeline_->submit(img, conf, iou, max_det);
}

std::vector<detect::Detection> CudaEngine::wait(uint64_t ticket) {
  if (!pipeline_) user_error("detection ticket {} is unknown: nothing was submitted", ticket);
  return pipeline_->wait(ticket);
}

std::string CudaEngine::device() const {
  const DeviceInfo& d = exec_.device();
  return fmt::format("GPU {}: {} ({})", d.ordinal, d.name, d.arch());
}

std::vector<KernelInfo> CudaEngine::kernels() const {
  std::vector<KernelInfo> k;
  for (const CudaLaunch& l : exec_.program().launches) k.push_back({l.symbol, l.task});
  return k;
}

std::vector<double> CudaEngine::profile_kernels(const std::vector<Tensor>&) {
  return exec_.profile_launches();
}

}  // namespace yoloc::runtime::cuda
