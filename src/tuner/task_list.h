#pragma once
/// The tuning tasks of a model: its kernel groups (codegen/cpu/tasks.h) with identical workloads
/// merged, since they share a workload key and therefore one schedule and one set of records.
#include <string>
#include <vector>

#include "codegen/cpu/tasks.h"
#include "ir/graph.h"

namespace yoloc::tuner {

/// One workload of a model.
struct TuneTask {
  codegen::cpu::CpuTask task;  ///< the first group with this workload (they lower identically)
  std::vector<int> groups;     ///< every group of the model with this workload
  uint64_t bytes = 0;          ///< bytes the default kernel's arguments touch per run

  int occurrences() const { return static_cast<int>(groups.size()); }
  const std::string& key() const { return task.key; }
  /// FLOPs of one run of the model spent in this workload.
  double model_flops() const { return task.flops * static_cast<double>(groups.size()); }
};

/// The workloads of `g` (after optimize() for target "cpu") with kernels for `isa`, in the order
/// of their first group.
std::vector<TuneTask> tuning_tasks(const Graph& g,
                                   codegen::cpu::CpuIsa isa = codegen::cpu::detect_host_isa());

/// A guess of one run's seconds before anything is measured (for shares and scheduling): the
/// larger of its compute time and its memory time at rough rates of one modern core.
double estimated_seconds(const TuneTask& t);

/// A short name of a task for tables: its group name and the start of its key.
std::string task_label(const TuneTask& t, size_t width = 60);

}  // namespace yoloc::tuner
