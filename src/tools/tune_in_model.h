#pragma once
/// The in-model re-measurement of `yoloc tune`: a kernel that is faster alone (its inputs and
/// weights hot in the core's caches, its loop the only work) is not always faster inside the
/// model, where its inputs come from the previous kernel and its weights from the shared cache
/// or memory. So after the search, each task's default and best configs are timed where they
/// will run: the model is compiled once per rank (every task's default, every task's best,
/// second best, ...), the artifacts run in turns with the runtime's per-kernel profiler, in a
/// forked process, and each task's per-occurrence time for each config is appended to the
/// records as a "model" record, which `compile --records` prefers to the records of kernels
/// timed alone.
#include <chrono>
#include <optional>
#include <string>

#include "tools/detector_model.h"
#include "tuner/progress.h"
#include "tuner/records.h"
#include "tuner/task_list.h"

namespace yoloc::tools {

struct InModelOptions {
  int top = 2;      ///< best configs per task, besides its default, to time in the model
  int rounds = 3;   ///< turns over the artifacts
  int iters = 10;   ///< profiled runs of each artifact per turn (after one warm-up run)
  int threads = 1;  ///< the executor's threads
  std::string isa;  ///< the kernels' ISA (compile --isa)
  double timeout_s = 600;
  /// The end of the run's time budget (none: nullopt): no artifact is compiled once the time
  /// left would not cover another compile, and the runs stop there.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

struct InModelSummary {
  int artifacts = 0;  ///< models compiled and timed (0: nothing to compare)
  int records = 0;    ///< "model" records appended
  double seconds = 0;
};

/// Times the tasks' default and best configs (from the kernel records of `query` in the file
/// `records`) inside whole-model runs and appends the results to that file. Raises a UserError
/// when the file cannot be read or written or a model does not compile; a crash or hang of the
/// runs is reported on `progress` and leaves the records as they were.
InModelSummary measure_in_model(const DetectorModelOptions& model,
                                const std::vector<tuner::TuneTask>& tasks,
                                const tuner::RecordQuery& query, const std::string& records,
                                const InModelOptions& options, tuner::ProgressDisplay& progress);

}  // namespace yoloc::tools
