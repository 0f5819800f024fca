#pragma once
/// Tuning for the CUDA target (built with it: YOLOC_HAVE_CUDA). The tasks of a graph optimized for
/// "cuda", the target a device gives, and the CUDA measurer: candidates built by NVRTC in
/// parallel, then run by a persistent worker process per device that owns the CUDA context (this
/// process never initialises CUDA: a context does not survive fork), one after the other with a
/// deadline each, as the CPU measurer does (worker_pool.h, cuda_worker.h). A candidate that
/// crashes the context costs its own result; a fresh worker takes the rest.
///
/// In the worker each kernel argument gets a device buffer of its own: an activation as many
/// elements as it addresses (its element offset plus its strided span; kept per task across
/// rounds), inputs filled with random values in [-1, 1] of the value's storage dtype (the same
/// for every candidate of a task), outputs with all-ones bytes (NaN: unwritten elements show),
/// constants as the compiler stores them, scratch zeroed. The default config's outputs, as the
/// worker's device computes them, are the reference; a candidate's outputs
/// must match them within the dtype's tolerance (fp16: 1e-2 relative and absolute, bf16: 5e-2,
/// fp32: MeasureOptions::rtol/atol; for fp16 and bf16 also the relative tolerance times the
/// reference's largest magnitude: output_check.h says why). Then one warm-up run and `repeats`
/// timed repeats, each of as many back-to-back runs as last min_repeat_s, timed by CUDA events
/// around the batch: the median repeat is the seconds per run.
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/tasks.h"
#include "tuner/measure.h"
#include "tuner/target.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

/// A CUDA task behind a TuneTask, with what its measurement needs beyond the task: the elements
/// each kernel argument addresses (CudaLowered::args order; for an activation its element offset
/// plus the span its strides reach, 0 for the other kinds), which the graph alone knows.
struct CudaTuneTask final : TargetTask {
  codegen::cuda::CudaTask task;
  std::vector<uint64_t> arg_elements;
  /// About what the default kernels reach on a data-centre GPU (H100 class), plus a launch.
  double estimated_seconds(double flops, uint64_t bytes) const override;
};

/// TaskInfo of a CUDA task.
TaskInfo task_info(const codegen::cuda::CudaTask& t);

/// The workloads of `g` (optimize()d for target "cuda", static shapes) in the order of their
/// first group, for a target of compute capability `sm` (as extract_cuda_tasks). Raises a
/// UserError for a group no CUDA template takes.
std::vector<TuneTask> cuda_tuning_tasks(const Graph& g, int sm = 80);

/// The CUDA target of devices `devices` (the first one's id) for kernels built for `arch`
/// ("sm_90"; empty: the first device's own): kind "cuda", the arch, the device's name. The
/// devices are asked in a short-lived child process. Raises a UserError when there is no driver
/// or no such device, when the devices are not all of one model and arch (their measurements go
/// into the same records), or when they cannot run `arch`'s cubins.
TuneTarget cuda_target(const std::vector<int>& devices, const std::string& arch);
/// cuda_target of the one device `device_id`.
TuneTarget cuda_target(int device_id, const std::string& arch);

/// The CUDA measurer: kernels built for `arch`, run on `devices` (all of one kind, see
/// cuda_target): one persistent worker per device, started at its first candidate; the devices
/// take a batch's candidates one by one, in parallel, each worker checking against its own run
/// of the task's reference (its default config, first in the task's first batch).
/// MeasureOptions used: repeats, min_repeat_s, timeout_s, build_jobs (NVRTC compilations at
/// once), max_slowdown, rtol / atol (fp32 outputs), inject. measure() raises a UserError naming
/// the device when a worker cannot set up (no driver, no such device).
std::unique_ptr<Measurer> make_cuda_measurer(const MeasureOptions& options, const std::string& arch,
                                             std::vector<int> devices);

}  // namespace yoloc::tuner
