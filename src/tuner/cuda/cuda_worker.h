#pragma once
/// The CUDA measurement worker: the request that carries one candidate to it (its cubin, kernel
/// symbols and launch geometry, and its arguments: what the worker cannot know from the state it
/// was forked with) and the worker's side, which owns the device's context and stream and keeps
/// per task the random inputs, the activations' device buffers and the reference outputs across
/// the rounds of a tuning run (cuda_tuning.h says how a candidate is run and checked).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cuda/tasks.h"
#include "core/dtype.h"
#include "tuner/measure.h"
#include "tuner/worker_process.h"

namespace yoloc::tuner {

/// One candidate for the CUDA worker.
struct CudaRequest {
  /// A kernel argument (CudaLowered::args order).
  struct Arg {
    codegen::cuda::CudaArg::Kind kind = codegen::cuda::CudaArg::Kind::kNull;
    bool output = false;
    DType dtype = DType::kFloat32;  ///< kActivation: the value's storage dtype
    uint64_t elements = 0;          ///< kActivation: CudaTuneTask::arg_elements
    int64_t element_offset = 0;     ///< kActivation: where the value starts
    std::string data;               ///< kConstant
  };
  /// A launch (CudaLowered::launches order).
  struct Launch {
    std::string symbol;
    std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
    unsigned shared_bytes = 0;
    bool persistent = false;  ///< CudaKernel::persistent: grid x capped at launch
  };
  MeasureRole role = MeasureRole::kCandidate;
  std::string task;  ///< workload key: the worker keeps the task's buffers and reference by it
  std::vector<Arg> args;
  uint64_t scratch_bytes = 0;
  std::vector<Launch> launches;
  std::shared_ptr<const std::string> cubin;
  std::string action;  ///< injected fault (MeasureOptions::inject), or ""
  double best_known_s = 0;
};

std::string encode_cuda_request(const CudaRequest& q);
/// Raises MalformedMessage when `message` is not an encoded CudaRequest.
CudaRequest decode_cuda_request(std::string_view message);

/// In a worker forked by the CUDA measurer: creates the context of device `device` (the first
/// CUDA call of the process) and a stream, and returns the function that serves encoded
/// CudaRequests. Answers need_reference to a kCandidate of a task without a reference here.
std::function<WorkerReply(std::string_view)> start_cuda_worker(int device,
                                                               const MeasureOptions& options);

}  // namespace yoloc::tuner
