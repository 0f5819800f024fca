#pragma once
/// One way to run any artifact: the engine its target needs (the CPU executor for "cpu-*", the
/// CUDA executor for "cuda-*"), behind the calls every tool and API makes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifact/artifact_reader.h"
#include "yoloc/tensor.h"
#include "detect/decode.h"
#include "yoloc/image.h"

namespace yoloc::runtime {

/// A kernel of an engine's program, for tools: its symbol and the compiler's description of its
/// task (template, workload, flops; may be empty).
struct KernelInfo {
  std::string symbol;
  nlohmann::json task;
};

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

  /// Worker threads of its executor (a CPU's pool); 0 where it has none.
  virtual int threads() const { return 0; }
  /// The kernels a run calls, in order.
  virtual std::vector<KernelInfo> kernels() const { return {}; }
  /// Runs the network once on `inputs` (a GPU engine: on the inputs of its latest run()), timing
  /// every kernel alone: milliseconds per kernels() entry. Raises a UserError where the engine
  /// cannot time its kernels.
  virtual std::vector<double> profile_kernels(const std::vector<Tensor>& inputs);
};

}  // namespace yoloc::runtime
