#pragma once
/// The tuning tasks of a model: its kernel groups with identical workloads merged, since they
/// share a workload key and therefore one schedule and one set of records. Each target makes
/// them from its own tasks (cpu_tasks.h, cuda/cuda_tuning.h).
///
/// The search, the cost model, the scheduler and the records see only a task's target-neutral
/// part (TaskInfo); the measurer of the task's target lowers it through the target's own task
/// (TargetTask), which nothing else looks into.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "ir/graph.h"

namespace yoloc::tuner {

/// What every target's task has: its workload, schedule space and validity.
struct TaskInfo {
  int group = -1;             ///< the first group with this workload
  std::string group_name;     ///< FusedGroup::name, e.g. "Conv+SiLU"
  std::string template_name;  ///< "conv", "elementwise", ...; "tc_conv", "generic", ... (cuda)
  std::string key;            ///< workload key
  double flops = 0;           ///< of one run (all images)
  int64_t batch = 1;          ///< images the kernel is looped over (cpu); 1 otherwise
  codegen::ScheduleSpace space;
  codegen::ScheduleConfig default_config;
  std::function<bool(const codegen::ScheduleConfig&)> valid;
  /// One kernel in place of other tasks (a CUDA back-to-back pair, which compile fuses only
  /// where it was measured faster than its two): left out of the report's kernel sums.
  bool alternative = false;
  /// A workload whose records this one starts from while it has none of its own (a CUDA conv
  /// storing class scores or boxes: the same conv storing its own output, CudaTask::twin_key); ""
  /// if none.
  std::string twin_key = {};
};

/// A target's own task behind a TuneTask (the CPU's kernel group, the CUDA task with its
/// argument spans): what its measurer lowers, builds and runs. The tuner only carries it.
class TargetTask {
 public:
  virtual ~TargetTask() = default;
  /// A guess of one run's seconds before anything is measured (for shares and scheduling): the
  /// larger of the compute and memory times of `flops` and `bytes` at the target's rough rates.
  virtual double estimated_seconds(double flops, uint64_t bytes) const = 0;
};

/// One workload of a model.
struct TuneTask {
  TaskInfo task;  ///< target-neutral; the first group with this workload (they lower identically)
  std::shared_ptr<const TargetTask> target_task;  ///< the target's own, shared by copies
  std::vector<int> groups;  ///< every group of the model with this workload
  uint64_t bytes = 0;       ///< bytes the default kernel's arguments touch per run

  /// The target's task as its own type T; nullptr when it is another target's.
  template <class T>
  const T* as() const {
    return dynamic_cast<const T*>(target_task.get());
  }
  int occurrences() const { return static_cast<int>(groups.size()); }
  const std::string& key() const { return task.key; }
  /// FLOPs of one run of the model spent in this workload.
  double model_flops() const { return task.flops * static_cast<double>(groups.size()); }
};

/// Appends `t` (its group: t.task.group) to `tasks`, or only its group to the task of `tasks`
/// with the same workload key.
void merge_task(std::vector<TuneTask>& tasks, TuneTask t);

/// The tasks whose space has every knob of `fixed` with its value in the knob's domain and a valid
/// config with those values (found by random sampling), each searching only the configs with
/// those values (the knob's domain is that value; the default config, the measurements'
/// baseline, stays). For a search of one part of the spaces, e.g. the
/// wgmma configs of the tensor-core convs ("wg" = 2). Raises a UserError naming a knob no task
/// has.
std::vector<TuneTask> fix_knobs(const std::vector<TuneTask>& tasks,
                                const std::map<std::string, int64_t>& fixed);

/// The tasks whose workload key matches `pattern` (an ECMAScript regular expression searched in
/// the key, e.g. " 3x3 " for the 3x3 convs), in their order. Raises a UserError for a pattern
/// that is no regular expression.
std::vector<TuneTask> only_matching(const std::vector<TuneTask>& tasks, const std::string& pattern);

/// A guess of one run's seconds before anything is measured (TargetTask::estimated_seconds).
double estimated_seconds(const TuneTask& t);

/// A short name of a task for tables: its group name and the start of its key.
std::string task_label(const TuneTask& t, size_t width = 60);

}  // namespace yoloc::tuner
