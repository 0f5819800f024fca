#pragma once
/// The tuning tasks of the CPU target: its kernel groups (codegen/cpu/tasks.h) as TuneTasks,
/// each carrying its CpuTask for the CPU measurer (measure.h).
#include <vector>

#include "codegen/cpu/tasks.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

/// A CPU kernel group behind a TuneTask.
struct CpuTuneTask final : TargetTask {
  codegen::cpu::CpuTask task;
  /// About what the default kernels reach on one AVX-512 core: 50 GFLOP/s in registers, 10 GB/s
  /// from memory.
  double estimated_seconds(double flops, uint64_t bytes) const override;
};

/// TaskInfo of a CPU task.
TaskInfo task_info(const codegen::cpu::CpuTask& t);

/// The workloads of `g` (after optimize() for target "cpu") with kernels for `isa`, in the order
/// of their first group.
std::vector<TuneTask> tuning_tasks(const Graph& g,
                                   codegen::cpu::CpuIsa isa = codegen::cpu::detect_host_isa());

}  // namespace yoloc::tuner
