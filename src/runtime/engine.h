#pragma once
/// One way to run any artifact: the engine its target needs (the CPU executor for "cpu-*", the
/// CUDA executor for "cuda-*"), behind the calls every tool and API makes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "artifact/artifact_reader.h"
#include "yoloc/tensor.h"
#include "detect/decode.h"
#include "yoloc/image.h"

namespace yoloc::runtime {

class Executor;
namespace cuda {
class CudaExecutor;
}

struct EngineOptions {
  int threads = 0;  ///< CPU worker threads; 0: the machine's hardware threads
  int device = 0;   ///< GPU ordinal (CUDA artifacts)
  /// Images a CUDA engine works on at once through submit() (each on its own stream, arena and
  /// CUDA graph; kernels and weights shared).
  int in_flight = 2;
  /// The most bytes of arena a CPU artifact may ask for (0: memory_limit.h's default).
  uint64_t max_memory = 0;
};

class Engine {
 public:
  /// The engine of `artifact`'s target. Raises a UserError when this build or machine cannot
  /// run it (a CUDA artifact without CUDA support or GPU, kernels for another CPU).
  static std::unique_ptr<Engine> open(std::shared_ptr<const artifact::Artifact> artifact,
                                      const EngineOptions& options);
  virtual ~Engine() = default;

  /// Runs the network on host tensors matching the manifest's inputs.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  /// True when the engine runs pre-processing, decoding and NMS itself (CUDA artifacts with
  /// the detection kernels); detect() is then the whole pipeline.
  virtual bool detects() const { return false; }
  /// Detections on `img` in image pixels, by score descending; only when detects().
  virtual std::vector<detect::Detection> detect(const detect::Image& img, float conf, float iou,
                                                int max_det);
  /// Pipelined detect() (only when detects()): starts detecting `img` and returns a ticket at
  /// once; up to in_flight images (EngineOptions) run concurrently, a submit beyond that first
  /// finishes the oldest. wait(ticket) returns the ticket's detections.
  virtual uint64_t submit(const detect::Image& img, float conf, float iou, int max_det);
  virtual std::vector<detect::Detection> wait(uint64_t ticket);
  /// "cpu, 2 threads" / "GPU 0: NVIDIA H200 (sm_90)".
  virtual std::string device() const = 0;
  virtual const artifact::Manifest& manifest() const = 0;

  /// The target's executor, for what only it offers (profiling, GPU timing); nullptr otherwise.
  virtual Executor* cpu() { return nullptr; }
  virtual cuda::CudaExecutor* cuda() { return nullptr; }
};

}  // namespace yoloc::runtime
