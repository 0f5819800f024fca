#include "runtime/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "runtime/executor.h"
#ifdef YOLOC_HAVE_CUDA
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/cuda_program.h"
#endif

namespace yoloc::runtime {
namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(std::shared_ptr<const artifact::Artifact> a, int threads) : exec_(std::move(a), threads) {}
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
  CudaEngine(std::shared_ptr<const artifact::Artifact> a, int device) : exec_(std::move(a), device) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  bool detects() const override { return exec_.can_detect(); }
  std::vector<detect::Detection> detect(const detect::Image& img, float conf, float iou,
                                        int max_det) override {
    return exec_.detect({img}, conf, iou, max_det).at(0);
  }
  std::string device() const override {
    const cuda::DeviceInfo& d = exec_.device();
    return fmt::format("GPU {}: {} ({})", d.ordinal, d.name, d.arch());
  }
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }
  cuda::CudaExecutor* cuda() override { return &exec_; }

 private:
  cuda::CudaExecutor exec_;
};
#endif

}  // namespace

std::vector<detect::Detection> Engine::detect(const detect::Image&, float, float, int) {
  user_error("the {} engine does not detect by itself; run the detection pipeline around it",
             device());
}

std::unique_ptr<Engine> Engine::open(std::shared_ptr<const artifact::Artifact> artifact,
                                     const EngineOptions& options) {
  if (options.threads < 0) user_error("the thread count {} must be >= 0", options.threads);
  if (artifact->manifest().target.rfind("cuda", 0) == 0) {
#ifdef YOLOC_HAVE_CUDA
    return std::make_unique<CudaEngine>(std::move(artifact), options.device);
#else
    user_error("'{}' is a CUDA artifact ({}); this yoloc was built without CUDA support",
               artifact->path(), artifact->manifest().target);
#endif
  }
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::make_unique<CpuEngine>(std::move(artifact), threads);
}

}  // namespace yoloc::runtime
