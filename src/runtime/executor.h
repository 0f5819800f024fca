#pragma once
/// Runs a CPU artifact's program (runtime/program.h): loads the kernel library from its blob,
/// takes every call's kernel from the library's table (kernel_binding.h), owns one 64-byte aligned arena, binds weights in place from the
/// artifact's mapping and calls the kernels in order over a thread pool.
#include <memory>
#include <string>
#include <vector>

#include "artifact/artifact_reader.h"
#include "yoloc/tensor.h"
#include "runtime/kernel_library.h"
#include "runtime/program.h"
#include "runtime/thread_pool.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::runtime {

class Executor {
 public:
  /// Prepares `artifact` (kept alive by the executor) for runs on `threads` threads (>= 1).
  /// Raises a UserError for an artifact without a valid program, whose kernels do not load or
  /// do not match the program (kernel_binding.h), or whose arena exceeds `max_memory` bytes
  /// (0: memory_limit.h's default).
  Executor(std::shared_ptr<const artifact::Artifact> artifact, int threads,
           uint64_t max_memory = 0);

  /// Runs the network. `inputs` must match the manifest's inputs in count, dtype and shape
  /// (a UserError says which does not). Not reentrant: one run at a time per executor.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  /// With profiling on, run() times every call: last_call_ms()[i] is program().calls[i]'s
  /// wall time of the latest run (a clock read around each call; off by default).
  void set_profiling(bool on) { profiling_ = on; }
  const std::vector<double>& last_call_ms() const { return call_ms_; }

  const artifact::Manifest& manifest() const { return artifact_->manifest(); }
  const Program& program() const { return program_; }
  int threads() const { return pool_.threads(); }

 private:
  /// A call with its pointers and function resolved.
  struct Bound {
    yoloc_kernel_fn fn = nullptr;
    std::vector<void*> args;
    std::vector<int64_t> params;
    int64_t work_items = 1;
  };
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };

  std::shared_ptr<const artifact::Artifact> artifact_;
  Program program_;
  std::unique_ptr<KernelLibrary> library_;
  std::unique_ptr<std::byte, FreeDeleter> arena_;
  std::vector<Bound> calls_;
  ThreadPool pool_;
  bool profiling_ = false;
  std::vector<double> call_ms_;
};

}  // namespace yoloc::runtime
