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

/// Runs fn(0..n-1) on up to `jobs` threads (fn must not throw).
void parallel_for_each(size_t n, int jobs, const std::function<void(size_t)>& fn);

/// The start of a (compiler) log, for an error message.
std::string first_lines(const std::string& log, size_t max_chars = 1500);

}  // namespace yoloc::tuner
