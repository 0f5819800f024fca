#pragma once
/// The per-task summary of a records file for one model: the default config's time against the
/// best time, of each kernel timed alone (the search's records) and, where the records have
/// them, inside whole-model runs (the in-model re-measurement), with the sums over the model's
/// kernels.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/records.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

struct TaskReport {
  std::string key, template_name, group_name;
  int occurrences = 1;
  double flops = 0;  ///< of one run of the task
  /// Timed alone: ConfigTime (records.h) of the default config and the lowest of any; 0: none.
  double default_s = 0, best_s = 0;
  /// Timed inside the model (per occurrence); 0: no in-model records.
  double model_default_s = 0, model_best_s = 0;
  codegen::ScheduleConfig default_config, best_config, model_best_config;
  /// What `yoloc compile --records` applies: the in-model best if any, else the best alone.
  codegen::ScheduleConfig chosen_config;
  int measured = 0, errors = 0;  ///< records of the task (valid, failed)
  bool alternative = false;      ///< TaskInfo::alternative: not in the sums
};

struct TuneReport {
  RecordQuery query;
  std::vector<TaskReport> tasks;
  /// Sums of occurrences x time over the tasks that have both a default and a best time, alone
  /// and in the model (alternatives left out).
  double default_latency_s = 0, tuned_latency_s = 0;
  double model_default_latency_s = 0, model_tuned_latency_s = 0;
  int covered = 0, model_covered = 0;  ///< tasks in those sums
  int tuned = 0;                       ///< tasks whose chosen config is not the default config
};

/// Records that were measured under the query's conditions: same hardware, same batch, and the
/// same thread count unless the query's is 0.
bool record_matches(const Record& r, const RecordQuery& q);

TuneReport make_report(const std::vector<TuneTask>& tasks, const std::vector<Record>& records,
                       const RecordQuery& q);
nlohmann::json report_to_json(const TuneReport& r);
/// A table for the terminal, one line per task, then the totals.
std::string report_table(const TuneReport& r);

}  // namespace yoloc::tuner
