#include "tuner/report.h"

#include <fmt/format.h>

#include <algorithm>

#include "tuner/progress.h"

namespace yoloc::tuner {

bool record_matches(const Record& r, const RecordQuery& q) {
  return r.target.same_hardware(q.target) && r.batch == q.batch &&
         (q.threads == 0 || r.threads == q.threads);
}

TuneReport make_report(const std::vector<TuneTask>& tasks, const std::vector<Record>& records,
                       const RecordQuery& q) {
  TuneReport rep;
  rep.query = q;
  std::map<std::string, size_t> index;
  for (const TuneTask& t : tasks) {
    TaskReport tr;
    tr.key = t.key();
    tr.template_name = t.task.template_name;
    tr.group_name = t.task.group_name;
    tr.occurrences = t.occurrences();
    tr.flops = t.task.flops;
    tr.default_config = t.task.default_config;
    tr.alternative = t.task.alternative;
    index[tr.key] = rep.tasks.size();
    rep.tasks.push_back(std::move(tr));
  }
  for (const Record& r : records) {
    const auto it = index.find(r.key);
    if (it == index.end() || !record_matches(r, q)) continue;
    TaskReport& tr = rep.tasks[it->second];
    ++(r.ok() ? tr.measured : tr.errors);
  }
  const auto per_run = [&](const ConfigTime& ct) {
    return ct.seconds_per_image * static_cast<double>(q.batch);
  };
  for (const char* mode : {"kernel", "model"}) {
    const bool in_model = std::string(mode) == "model";
    const auto times = config_times(
        records, [&](const Record& r) { return record_matches(r, q) && r.mode == mode; });
    for (const auto& [key, configs] : times) {
      const auto it = index.find(key);
      if (it == index.end()) continue;
      TaskReport& tr = rep.tasks[it->second];
      double& def = in_model ? tr.model_default_s : tr.default_s;
      double& best = in_model ? tr.model_best_s : tr.best_s;
      codegen::ScheduleConfig& best_config = in_model ? tr.model_best_config : tr.best_config;
      if (const auto d = configs.find(tr.default_config.str()); d != configs.end())
        def = per_run(d->second);
      for (const auto& [cfg, ct] : configs) {
        if (best == 0 || per_run(ct) < best) {
          best = per_run(ct);
          best_config = ct.config;
        }
      }
    }
  }
  for (TaskReport& tr : rep.tasks) {
    tr.chosen_config = tr.model_best_s > 0 ? tr.model_best_config
                       : tr.best_s > 0     ? tr.best_config
                                           : tr.default_config;
    if (!(tr.chosen_config == tr.default_config)) ++rep.tuned;
    if (tr.alternative) continue;
    if (tr.default_s > 0 && tr.best_s > 0) {
      ++rep.covered;
      rep.default_latency_s += tr.occurrences * tr.default_s;
      rep.tuned_latency_s += tr.occurrences * tr.best_s;
    }
    if (tr.model_default_s > 0 && tr.model_best_s > 0) {
      ++rep.model_covered;
      rep.model_default_latency_s += tr.occurrences * tr.model_default_s;
      rep.model_tuned_latency_s += tr.occurrences * tr.model_best_s;
    }
  }
  return rep;
}

nlohmann::json report_to_json(const TuneReport& r) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const TaskReport& t : r.tasks) {
    tasks.push_back({{"key", t.key},
                     {"template", t.template_name},
                     {"group", t.group_name},
                     {"occurrences", t.occurrences},
                     {"flops", t.flops},
                     {"default_s", t.default_s},
                     {"best_s", t.best_s},
                     {"speedup", t.default_s > 0 && t.best_s > 0 ? t.default_s / t.best_s : 0.0},
                     {"default_config", t.default_config.str()},
                     {"best_config", t.best_config.str()},
                     {"model_default_s", t.model_default_s},
                     {"model_best_s", t.model_best_s},
                     {"model_best_config", t.model_best_config.str()},
                     {"chosen_config", t.chosen_config.str()},
                     {"measured", t.measured},
                     {"errors", t.errors},
                     {"alternative", t.alternative}});
  }
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  return {{"target", target_to_json(r.query.target)},
          {"batch", r.query.batch},
          {"threads", r.query.threads},
          {"tasks", tasks},
          {"covered_tasks", r.covered},
          {"tuned_tasks", r.tuned},
          {"kernel_sum_default_s", r.default_latency_s},
          {"kernel_sum_tuned_s", r.tuned_latency_s},
          {"speedup", ratio(r.default_latency_s, r.tuned_latency_s)},
          {"model_covered_tasks", r.model_covered},
          {"model_kernel_sum_default_s", r.model_default_latency_s},
          {"model_kernel_sum_tuned_s", r.model_tuned_latency_s},
          {"model_speedup", ratio(r.model_default_latency_s, r.model_tuned_latency_s)}};
}

std::string report_table(const TuneReport& r) {
  const auto speedup = [](double d, double b) {
    return d > 0 && b > 0 ? fmt::format("{:.2f}x", d / b) : std::string("-");
  };
  std::string s = fmt::format(
      "{:>3} {:<11} {:>3} {:>8} | {:>10} {:>10} {:>7} | {:>10} {:>10} {:>7} "
      "| {:>5} {:>4}  {}\n",
      "#", "template", "x", "MFLOP", "alone: def", "tuned", "speedup", "model: def", "tuned",
      "speedup", "runs", "fail", "workload");
  for (size_t i = 0; i < r.tasks.size(); ++i) {
    const TaskReport& t = r.tasks[i];
    std::string key = t.key.size() > 60 ? t.key.substr(0, 57) + "..." : t.key;
    s += fmt::format(
        "{:>3} {:<11} {:>3} {:>8.1f} | {:>10} {:>10} {:>7} | {:>10} {:>10} {:>7} | {:>5} {:>4}  "
        "{}\n",
        i + 1, t.template_name, t.occurrences, t.flops / 1e6, format_seconds(t.default_s),
        format_seconds(t.best_s), speedup(t.default_s, t.best_s), format_seconds(t.model_default_s),
        format_seconds(t.model_best_s), speedup(t.model_default_s, t.model_best_s), t.measured,
        t.errors, key);
  }
  const auto alternatives = std::count_if(r.tasks.begin(), r.tasks.end(),
                                          [](const TaskReport& t) { return t.alternative; });
  s += fmt::format("kernels alone, sum over {} of {} tasks: default {}, tuned {} ({})\n", r.covered,
                   r.tasks.size() - alternatives, format_seconds(r.default_latency_s),
                   format_seconds(r.tuned_latency_s),
                   speedup(r.default_latency_s, r.tuned_latency_s));
  if (alternatives > 0)
    s += fmt::format(
        "{} fused pairs timed too (compile fuses those faster than their two kernels)\n",
        alternatives);
  if (r.model_covered > 0)
    s += fmt::format("kernels in the model, sum over {} tasks: default {}, tuned {} ({})\n",
                     r.model_covered, format_seconds(r.model_default_latency_s),
                     format_seconds(r.model_tuned_latency_s),
                     speedup(r.model_default_latency_s, r.model_tuned_latency_s));
  s += fmt::format("{} tasks take another config than their default\n", r.tuned);
  return s;
}

}  // namespace yoloc::tuner
