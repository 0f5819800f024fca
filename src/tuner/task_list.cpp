#include "tuner/task_list.h"

#include <algorithm>
#include <regex>
#include <set>

#include "core/error.h"
#include "tuner/search_space.h"

namespace yoloc::tuner {

void merge_task(std::vector<TuneTask>& tasks, TuneTask t) {
  for (TuneTask& o : tasks) {
    if (o.key() != t.key()) continue;
    o.groups.push_back(t.task.group);
    return;
  }
  t.groups = {t.task.group};
  tasks.push_back(std::move(t));
}

namespace {
// Random configs fix_knobs tries before it takes a task to have no valid one with the values.
constexpr int kFixTries = 20000;
}  // namespace

std::vector<TuneTask> fix_knobs(const std::vector<TuneTask>& tasks,
                                const std::map<std::string, int64_t>& fixed) {
  std::vector<TuneTask> out;
  std::set<std::string> seen;
  for (const TuneTask& t : tasks) {
    TuneTask f = t;
    bool keep = true;
    for (const auto& [name, value] : fixed) {
      const auto k = std::find_if(f.task.space.knobs.begin(), f.task.space.knobs.end(),
                                  [&](const codegen::Knob& x) { return x.name == name; });
      if (k == f.task.space.knobs.end()) {
        keep = false;
        continue;
      }
      seen.insert(name);
      keep = keep && std::find(k->domain.begin(), k->domain.end(), value) != k->domain.end();
      k->domain = {value};
    }
    if (!keep) continue;
    // Bred configs take knob values from measured ones too (of the whole space, resumed).
    f.task.valid = [valid = t.task.valid, fixed](const codegen::ScheduleConfig& c) {
      for (const auto& [name, value] : fixed)
        if (c.get(name) != value) return false;
      return valid(c);
    };
    // A task none of whose configs may take the values (a b2b pair with "wg" = 2) is left
    // out, not measured for its default alone.
    Rng rng(1);
    if (!sample_valid(f.task, rng, kFixTries)) continue;
    out.push_back(std::move(f));
  }
  for (const auto& [name, value] : fixed)
    if (!seen.count(name))
      user_error("--fix {}={}: no task of this model has a knob '{}'", name, value, name);
  return out;
}

std::vector<TuneTask> only_matching(const std::vector<TuneTask>& tasks,
                                    const std::string& pattern) {
  std::regex re;
  try {
    re = std::regex(pattern);
  } catch (const std::regex_error& e) {
    user_error("--only '{}': not a regular expression ({})", pattern, e.what());
  }
  std::vector<TuneTask> out;
  for (const TuneTask& t : tasks)
    if (std::regex_search(t.key(), re)) out.push_back(t);
  return out;
}

double estimated_seconds(const TuneTask& t) {
  return t.target_task->estimated_seconds(t.task.flops, t.bytes);
}

std::string task_label(const TuneTask& t, size_t width) {
  std::string s = t.key();
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

}  // namespace yoloc::tuner
