#pragma once
/// What the measurers of every target share besides their workers (worker_pool.h): the
/// fault-injection test hook, parallel builds, and error messages cut to size.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "tuner/measure.h"

namespace yoloc::tuner {

/// The test hook MeasureOptions::inject: configs the worker crashes on, hangs on, or computes
/// wrong outputs for.
struct Injection {
  std::string action;         ///< "crash", "hang", "wrong"
  std::string template_name;  ///< empty: any
  std::map<std::string, int64_t> knobs;
};

/// Parses MeasureOptions::inject; raises a UserError for a malformed item.
std::vector<Injection> parse_injections(const std::string& spec);

/// The action of the first injection that matches a config of a task of template `tmpl`, or "".
std::string injected_action(const std::vector<Injection>& injections, const std::string& tmpl,
                            const codegen::ScheduleConfig& c);

/// A task's reference as the measurers of every target keep it.
struct TaskReference {
  bool has_reference = false;
  std::string reference_error;  ///< why the reference failed; empty while it has not
  /// The default config's request, untimed: it makes the reference in a worker that lacks it.
  std::string reference_request;

  /// The start of a batch of `configs` of the task `key`: when its reference failed, every
  /// candidate is skipped ("no reference: ...") in `results` and false is returned. Else
  /// *first_makes_reference says whether the first candidate makes the reference (the task has
  /// none yet; it must then be the default config).
  bool start_batch(const std::vector<codegen::ScheduleConfig>& configs,
                   const codegen::ScheduleConfig& default_config, const std::string& key,
                   std::vector<MeasureResult>& results, bool* first_makes_reference) const;
  /// The end of a batch whose workers ran the candidates not `done` into `results`: when the
  /// first made the reference, the task has it now, or (when that failed) never will; every
  /// candidate the workers did not reach is skipped, with the reason.
  void end_batch(bool first_made_reference, const std::vector<bool>& done,
                 std::vector<MeasureResult>& results);
};

/// Runs fn(0..n-1) on up to `jobs` threads (fn must not throw).
void parallel_for_each(size_t n, int jobs, const std::function<void(size_t)>& fn);

/// The start of a (compiler) log, for an error message.
std::string first_lines(const std::string& log, size_t max_chars = 1500);

}  // namespace yoloc::tuner
