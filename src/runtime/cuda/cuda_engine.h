#pragma once
/// The engine of CUDA artifacts (runtime/engine.h): the CUDA executor behind the calls every
/// tool makes, pipelined detection through submit() / wait(). What only a GPU offers (the
/// network alone as one graph, in-graph kernel costs, pinned frame buffers, lanes) is its
/// executor's (executor()), which the CUDA measurements of `yoloc bench` / `profile` use.
#include <memory>

#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/pipelined_detect.h"
#include "runtime/engine.h"

namespace yoloc::runtime::cuda {

class CudaEngine final : public Engine {
 public:
  CudaEngine(std::shared_ptr<const artifact::Artifact> a, int device, int in_flight);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exec_.run(inputs); }
  bool detects() const override { return exec_.can_detect(); }
  std::vector<detect::Detection> detect(const detect::Image& img, float conf, float iou,
                                        int max_det) override;
  uint64_t submit(const detect::Image& img, float conf, float iou, int max_det) override;
  std::vector<detect::Detection> wait(uint64_t ticket) override;
  std::string device() const override;
  const artifact::Manifest& manifest() const override { return exec_.manifest(); }
  std::vector<KernelInfo> kernels() const override;
  std::vector<double> profile_kernels(const std::vector<Tensor>& inputs) override;

  CudaExecutor& executor() { return exec_; }

 private:
  CudaExecutor exec_;
  int in_flight_;
  std::unique_ptr<PipelinedDetect> pipeline_;  ///< made at the first submit
};

}  // namespace yoloc::runtime::cuda
