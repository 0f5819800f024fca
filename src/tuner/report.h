#pragma once
/// The per-task summary of a records file for one model: the default config's time against the
/// best time, and the model's latency as the sum over its kernels (each measured alone).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/records.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

struct TaskReport {
  std::string key, template_name, group_name;
  int occurrences = 1;
  double flops = 0;     ///< of one run of the task
  double default_s = 0; ///< ConfigTime of the default config (records.h); 0: none
  double best_s = 0;    ///< the lowest ConfigTime of any config; 0: none
  codegen::ScheduleConfig default_config, best_config;
  int measured = 0, errors = 0;  ///< records of the task (valid, failed)
};

struct TuneReport {
  RecordQuery query;
  std::vector<TaskReport> tasks;
  /// Sums of occurrences x time over the tasks that have both a default and a best time.
  double default_latency_s = 0, tuned_latency_s = 0;
  int covered = 0;  ///< tasks in those sums
  int tuned = 0;    ///< tasks whose best record is not the default config
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
