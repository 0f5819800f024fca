#include "runtime/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "runtime/executor.h"
#ifdef YOLOC_HAVE_CUDA
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/pipelined_detect.h"
#endif
#ifdef YOLOC_HAVE_OPENCL
#include "runtime/opencl/opencl_executor.h"
#endif

namespace yoloc::runtime {
namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(std::shared_ptr<const artifact::Artifact> a, int threads, uint64_t max_memory)
      : exec_(std::move(a), threads, max_memory) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  std::string device() const override { return fmt::format("cpu, {} threads", exec_.threads()); }
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }
  Executor* cpu() override { return &exec_; }

 private:
  Executor exec_;
};

#ifdef YOLOC_HAVE_CUDA
class CudaEngine final : public Engine {
 public:
  CudaEngine(std::shared_ptr<const artifact::Artifact> a, int device, int in_flight)
      : exec_(std::move(a), device), in_flight_(in_flight) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  bool detects() const override { return exec_.can_detect(); }
  std::vector<detect::Detection> detect(const detect::Image& img, float conf, float iou,
                                        int max_det) override {
    if (pipeline_) pipeline_->drain();  // the first lane is exec_ itself
    return exec_.detect(std::span(&img, 1), conf, iou, max_det).at(0);
  }
  uint64_t submit(const detect::Image& img, float conf, float iou, int max_det) override {
    if (!pipeline_) pipeline_ = std::make_unique<cuda::PipelinedDetect>(exec_, in_flight_);
    return pipeline_->submit(img, conf, iou, max_det);
  }
  std::vector<detect::Detection> wait(uint64_t ticket) override {
    if (!pipeline_) user_error("detection ticket {} is unknown: nothing was submitted", ticket);
    return pipeline_->wait(ticket);
  }
  std::string device() const override {
    const cuda::DeviceInfo& d = exec_.device();
    return fmt::format("GPU {}: {} ({})", d.ordinal, d.name, d.arch());
  }
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }
  cuda::CudaExecutor* cuda() override { return &exec_; }

 private:
  cuda::CudaExecutor exec_;
  int in_flight_;
  std::unique_ptr<cuda::PipelinedDetect> pipeline_;  ///< made at the first submit
};
#endif

#ifdef YOLOC_HAVE_OPENCL
class OpenClEngine final : public Engine {
 public:
  OpenClEngine(std::shared_ptr<const artifact::Artifact> a, int device) : exec_(std::move(a), device) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  std::string device() const override { return "OpenCL " + exec_.device().str(); }
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }

 private:
  opencl::OpenClExecutor exec_;
};
#endif

}  // namespace

std::vector<detect::Detection> Engine::detect(const detect::Image&, float, float, int) {
  user_error("the {} engine does not detect by itself; run the detection pipeline around it",
             device());
}

uint64_t Engine::submit(const detect::Image&, float, float, int) {
  user_error("the {} engine does not detect by itself; run the detection pipeline around it",
             device());
}

std::vector<detect::Detection> Engine::wait(uint64_t ticket) {
  user_error("detection ticket {} is unknown: the {} engine does not detect by itself", ticket,
             device());
}

std::unique_ptr<Engine> Engine::open(std::shared_ptr<const artifact::Artifact> artifact,
                                     const EngineOptions& options) {
  if (options.threads < 0) user_error("the thread count {} must be >= 0", options.threads);
  if (artifact->manifest().target.rfind("cuda", 0) == 0) {
#ifdef YOLOC_HAVE_CUDA
    if (options.in_flight < 1)
      user_error("{} images in flight: at least 1 is needed", options.in_flight);
    return std::make_unique<CudaEngine>(std::move(artifact), options.device, options.in_flight);
#else
    user_error("'{}' is a CUDA artifact ({}); this yoloc was built without CUDA support",
               artifact->path(), artifact->manifest().target);
#endif
  }
  if (artifact->manifest().target.rfind("opencl", 0) == 0) {
#ifdef YOLOC_HAVE_OPENCL
    return std::make_unique<OpenClEngine>(std::move(artifact), options.device);
#else
    user_error("'{}' is an OpenCL artifact; this yoloc was built without OpenCL support "
               "(-DYOLOC_OPENCL=ON with the OpenCL headers)",
               artifact->path());
#endif
  }
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::make_unique<CpuEngine>(std::move(artifact), threads, options.max_memory);
}

}  // namespace yoloc::runtime
