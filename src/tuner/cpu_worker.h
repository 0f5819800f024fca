#pragma once
/// The CPU measurement worker: the request that carries one candidate to it (what the worker
/// cannot know from the state it was forked with: the built shared object, the kernel's
/// arguments and constants) and the worker's side, which keeps per task the random inputs and
/// the reference outputs, and the shared objects it loaded, across the rounds of a tuning run.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cpu/tasks.h"
#include "tuner/measure.h"
#include "tuner/worker_process.h"

namespace yoloc::tuner {

/// One candidate for the CPU worker.
struct CpuRequest {
  MeasureRole role = MeasureRole::kCandidate;
  std::string task;   ///< workload key: the worker keeps the task's inputs and reference by it
  int64_t batch = 1;  ///< images the kernel runs over (activations are batch * KernelArg::bytes)
  /// The kernel's arguments: kind, output, bytes and constant data (the value is not sent).
  std::vector<codegen::cpu::KernelArg> args;
  uint64_t object = 0;  ///< the shared object's id, unique in a measurer: the worker loads it once
  std::shared_ptr<const std::string> so;  ///< the shared object
  std::string symbol;                     ///< the candidate's ABI wrapper in it
  int64_t items = 0;                      ///< work items of one run over the batch
  std::string action;                     ///< injected fault (MeasureOptions::inject), or ""
  double best_known_s = 0;                ///< see MeasureOptions::max_slowdown
};

std::string encode_cpu_request(const CpuRequest& q);
/// Raises MalformedMessage when `message` is not an encoded CpuRequest.
CpuRequest decode_cpu_request(std::string_view message);

/// In a worker forked by the CPU measurer: sets it up (its thread pool, the buffer that flushes
/// the caches) and returns the function that serves encoded CpuRequests. Answers need_reference
/// to a kCandidate of a task without a reference in this worker.
std::function<WorkerReply(std::string_view)> start_cpu_worker(const MeasureOptions& options);

}  // namespace yoloc::tuner
