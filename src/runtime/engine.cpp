#include "runtime/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "runtime/executor.h"
#ifdef YOLOC_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif
#ifdef YOLOC_HAVE_OPENCL
#include "runtime/opencl/opencl_executor.h"
#endif

namespace yoloc::runtime {
namespace {

std::vector<KernelInfo> kernel_infos(const Program& program) {
  std::vector<KernelInfo> k;
  for (const KernelCall& c : program.calls) k.push_back({c.symbol, c.task});
  return k;
}

/// One run of an executor that times its calls when profiling is on (CPU, OpenCL).
template <class Exec>
std::vector<double> profiled_run(Exec& exec, const std::vector<Tensor>& inputs) {
  exec.set_profiling(true);
  exec.run(inputs);
  exec.set_profiling(false);
  return exec.last_call_ms();
}

class CpuEngine final : public Engine {
 public:
  CpuEngine(std::shared_ptr<const artifact::Artifact> a, int threads, uint64_t max_memory)
      : exec_(std::move(a), threads, max_memory) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  std::string device() const override { return fmt::format("cpu, {} threads", exec_.threads()); }
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }
  int threads() const override { return exec_.threads(); }
  std::vector<KernelInfo> kernels() const override { return kernel_infos(exec_.program()); }
  std::vector<double> profile_kernels(const std::vector<Tensor>& inputs) override {
    return profiled_run(exec_, inputs);
  }

 private:
  Executor exec_;
};

#ifdef YOLOC_HAVE_OPENCL
class OpenClEngine final : public Engine {
 public:
  OpenClEngine(std::shared_ptr<const artifact::Artifact> a, int device) : exec_(std::move(a), device) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  std::string device() const override { return "OpenCL " + exec_.device().str(); }
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }
  std::vector<KernelInfo> kernels() const override { return kernel_infos(exec_.program()); }
  std::vector<double> profile_kernels(const std::vector<Tensor>& inputs) override {
    return profiled_run(exec_, inputs);
  }

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

std::vector<double> Engine::profile_kernels(const std::vector<Tensor>&) {
  user_error("the {} engine cannot time its kernels one by one", device());
}

std::unique_ptr<Engine> Engine::open(std::shared_ptr<const artifact::Artifact> artifact,
                                     const EngineOptions& options) {
  if (options.threads < 0) user_error("the thread count {} must be >= 0", options.threads);
  if (artifact->manifest().target.rfind("cuda", 0) == 0) {
#ifdef YOLOC_HAVE_CUDA
    return std::make_unique<cuda::CudaEngine>(std::move(artifact), options.device, options.in_flight);
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
