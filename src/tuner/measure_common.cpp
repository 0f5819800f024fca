#include "tuner/measure_common.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/strings.h"

namespace yoloc::tuner {
namespace {

using Clock = std::chrono::steady_clock;

using Interval = std::pair<Clock::time_point, Clock::time_point>;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

/// The union of `intervals`, as intervals ordered and apart.
std::vector<Interval> merged(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

}  // namespace

std::unique_ptr<BuiltBatch> Measurer::build(const TuneTask& task,
                                            const std::vector<codegen::ScheduleConfig>& configs) {
  return build(task, configs, queue_build());
}

std::unique_ptr<BuiltBatch> Measurer::build(const TuneTask& task,
                                            const std::vector<codegen::ScheduleConfig>& configs,
                                            uint64_t place) {
  const auto t0 = Clock::now();
  BuildJobs jobs(jobs_, place);
  std::unique_ptr<BuiltBatch> b = build_batch(task, configs, jobs);
  const std::lock_guard<std::mutex> lock(mutex_);
  builds_.emplace_back(t0, Clock::now());
  return b;
}

std::vector<MeasureResult> Measurer::run(BuiltBatch& batch, double best_known_s) {
  const auto t0 = Clock::now();
  std::vector<MeasureResult> results = run_batch(batch, best_known_s);
  const std::lock_guard<std::mutex> lock(mutex_);
  runs_.emplace_back(t0, Clock::now());
  return results;
}

double Measurer::build_seconds() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  double s = 0;
  for (const auto& [a, b] : merged(builds_)) s += seconds(b - a);
  return s;
}

double Measurer::run_seconds() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  double s = 0;
  for (const auto& [a, b] : runs_) s += seconds(b - a);
  return s;
}

double Measurer::build_overlap_seconds() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  // The runs follow one another (one at a time); builds may run at once, so their union is
  // what may overlap a run.
  double s = 0;
  size_t first = 0;
  for (const auto& [b0, b1] : merged(builds_)) {
    while (first < runs_.size() && runs_[first].second <= b0) ++first;
    for (size_t k = first; k < runs_.size() && runs_[k].first < b1; ++k)
      s += seconds(std::min(b1, runs_[k].second) - std::max(b0, runs_[k].first));
  }
  return s;
}

uint64_t JobQueue::enter() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return places_++;
}

void JobQueue::consume(uint64_t place) {
  if (place < first_) return;
  served_.insert(place);
  while (!served_.empty() && *served_.begin() == first_) {
    served_.erase(served_.begin());
    ++first_;
  }
}

int JobQueue::take(uint64_t place, int want) {
  const int count = std::clamp(want, 1, jobs_);
  std::unique_lock<std::mutex> lock(mutex_);
  const bool served = place < first_ || served_.count(place) > 0;
  changed_.wait(lock, [&] { return (served || place == first_) && taken_ + count <= jobs_; });
  taken_ += count;
  consume(place);
  changed_.notify_all();  // the next place may fit in what is left
  return count;
}

void JobQueue::leave(uint64_t place) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    consume(place);
  }
  changed_.notify_all();
}

void JobQueue::give_back(int count) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    taken_ -= count;
  }
  changed_.notify_all();
}

std::vector<Injection> parse_injections(const std::string& spec) {
  std::vector<Injection> out;
  for (const std::string& item : split(spec, ';')) {
    if (item.empty()) continue;
    const auto colon = item.find(':');
    Injection inj;
    const auto at = item.find('@');
    inj.action = item.substr(0, std::min(colon, at));
    if (at < colon) inj.template_name = item.substr(at + 1, colon - at - 1);
    if (colon == std::string::npos ||
        (inj.action != "crash" && inj.action != "hang" && inj.action != "wrong"))
      user_error(
          "YOLOC_TUNE_INJECT '{}': expected ACTION[@TEMPLATE]:KNOB=V,... with ACTION "
          "crash, hang or wrong",
          item);
    const std::vector<std::string> knobs = split(item.substr(colon + 1), ',');
    for (size_t k = 0; k < knobs.size(); ++k) {
      const std::string& kv = knobs[k];
      if (kv.empty() && k + 1 == knobs.size()) break;  // "", or a trailing comma
      const auto eq = kv.find('=');
      try {
        if (eq == std::string::npos) throw std::invalid_argument(kv);
        inj.knobs[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      } catch (const std::exception&) {
        user_error("YOLOC_TUNE_INJECT '{}': '{}' is not KNOB=INTEGER", item, kv);
      }
    }
    out.push_back(std::move(inj));
  }
  return out;
}

std::string injected_action(const std::vector<Injection>& injections, const std::string& tmpl,
                            const codegen::ScheduleConfig& c) {
  for (const Injection& inj : injections) {
    bool all = !inj.knobs.empty() && (inj.template_name.empty() || inj.template_name == tmpl);
    for (const auto& [k, v] : inj.knobs) {
      const auto it = c.values().find(k);
      all = all && it != c.values().end() && it->second == v;
    }
    if (all) return inj.action;
  }
  return "";
}

void parallel_for_each(size_t n, int jobs, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs && static_cast<size_t>(j) < n; ++j) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

std::string first_lines(const std::string& log, size_t max_chars) {
  return log.size() <= max_chars ? log : log.substr(0, max_chars) + "\n...";
}

bool TaskReference::start_batch(const std::vector<codegen::ScheduleConfig>& configs,
                                const codegen::ScheduleConfig& default_config,
                                const std::string& key, std::vector<MeasureResult>& results,
                                bool* first_makes_reference) const {
  if (!reference_error.empty()) {
    for (MeasureResult& r : results) {
      r.error = "no reference: " + reference_error;
      r.skipped = true;
    }
    return false;
  }
  if (!has_reference) {
    YOLOC_CHECK(configs.at(0) == default_config,
                "tuner: the first candidates of {} must start with its default config", key);
  }
  *first_makes_reference = !has_reference;
  return true;
}

void TaskReference::end_batch(bool first_made_reference, const std::vector<bool>& done,
                              std::vector<MeasureResult>& results) {
  if (first_made_reference) {
    if (results[0].ok()) {
      has_reference = true;
    } else {
      reference_error = "the default config failed (" + results[0].error + ")";
      reference_request.clear();
    }
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (done[i]) continue;
    results[i].error = reference_error.empty() ? "not run: the measurement worker stopped before it"
                                               : "no reference: " + reference_error;
    results[i].skipped = true;
  }
}

}  // namespace yoloc::tuner
