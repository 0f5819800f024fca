#pragma once
/// Runs an OpenCL artifact's program (artifact/program.h; kernels of codegen/opencl's ABI): one
/// context and in-order queue on the chosen device, the program built at load from the
/// artifact's OpenCL C source (or its binary from the kernel build cache, keyed by platform,
/// device, driver version and the source), one arena buffer from the memory plan, the weights
/// in one read-only buffer; a run writes the inputs, enqueues every call and reads the outputs.
#include <memory>
#include <string>
#include <vector>

#include "artifact/artifact_reader.h"
#include "yoloc/tensor.h"
#include "runtime/opencl/cl_device.h"
#include "runtime/program.h"

namespace yoloc::runtime::opencl {

class OpenClExecutor {
 public:
  /// Prepares `artifact` on device `device` (select_device). Raises a UserError (one line) when
  /// OpenCL or the device is missing, or the program does not build (its log attached).
  OpenClExecutor(std::shared_ptr<const artifact::Artifact> artifact, int device);
  ~OpenClExecutor();
  OpenClExecutor(const OpenClExecutor&) = delete;
  OpenClExecutor& operator=(const OpenClExecutor&) = delete;

  /// Runs the network on host tensors matching the manifest's inputs. One run at a time.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  /// With profiling on, run() times every call by its OpenCL events (last_call_ms()[i]).
  void set_profiling(bool on) { profiling_ = on; }
  const std::vector<double>& last_call_ms() const { return call_ms_; }
  const Program& program() const { return program_; }

  const artifact::Manifest& manifest() const { return artifact_->manifest(); }
  const ClDevice& device() const { return device_; }
  /// True when the program binary came from the kernel build cache.
  bool binary_from_cache() const { return from_cache_; }

 private:
  void build_program(const std::string& source);

  std::shared_ptr<const artifact::Artifact> artifact_;
  Program program_;
  ClDevice device_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_command_queue profiling_queue_ = nullptr;
  cl_program cl_program_ = nullptr;
  cl_mem arena_ = nullptr, weights_ = nullptr;
  std::vector<cl_kernel> kernels_;
  bool from_cache_ = false;
  bool profiling_ = false;
  std::vector<double> call_ms_;
};

}  // namespace yoloc::runtime::opencl
