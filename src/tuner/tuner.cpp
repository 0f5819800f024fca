#include "tuner/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "tuner/cost_model.h"
#include "tuner/report.h"
#include "tuner/search_strategy.h"
#include "tuner/task_scheduler.h"

namespace yoloc::tuner {
namespace {

using Clock = std::chrono::steady_clock;

struct TaskRun {
  SearchState search;
  double best_s = 0, default_s = 0;
  int trials = 0;
};

}  // namespace

TuneSummary tune(const std::vector<TuneTask>& tasks, const TuneOptions& o, Measurer& measurer,
                 ProgressDisplay& progress) {
  if (o.trials <= 0 && o.time_budget_s <= 0)
    user_error("tune needs a budget: --trials N or --time-budget DURATION");
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  TuneSummary sum;
  const RecordQuery query{o.target, o.batch, o.measure.threads};
  const RecordSet existing = load_records(o.records);
  sum.stale = existing.stale;
  RecordWriter writer(o.records);

  CostModel model;
  std::vector<TaskRun> runs(tasks.size());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tasks.size(); ++i) {
    runs[i].search.task = &tasks[i];
    index[tasks[i].key()] = i;
  }
  for (const Record& r : existing.records) {
    const auto it = index.find(r.key);
    if (it == index.end() || !record_matches(r, query)) continue;
    TaskRun& run = runs[it->second];
    if (!r.config.in_space(tasks[it->second].task.space)) continue;
    ++sum.resumed;
    run.search.tried.insert(r.config.str());
    model.add(tasks[it->second], r.config, r.ok() ? r.median : -1);
    if (!r.ok()) continue;
    run.search.measured.emplace_back(r.config, r.median);
    if (run.best_s == 0 || r.median < run.best_s) run.best_s = r.median;
    if (r.config == tasks[it->second].task.default_config &&
        (run.default_s == 0 || r.median < run.default_s))
      run.default_s = r.median;
  }
  model.train();
  std::unique_ptr<SearchStrategy> strategy = make_strategy(o.strategy, &model, o.seed);

  std::vector<double> weights, estimates;
  for (const TuneTask& t : tasks) {
    weights.push_back(t.occurrences());
    estimates.push_back(estimated_seconds(t));
  }
  TaskScheduler::Options so;
  so.early_stopping = o.early_stopping;
  TaskScheduler scheduler(weights, estimates, so);
  for (size_t i = 0; i < tasks.size(); ++i) scheduler.seed(static_cast<int>(i), runs[i].best_s);
  if (sum.resumed > 0 || sum.stale > 0)
    progress.note(fmt::format("resuming from {}: {} records of these tasks ({} of other versions "
                              "ignored)",
                              o.records, sum.resumed, sum.stale));

  for (;;) {
    const bool trials_spent = o.trials > 0 && sum.trials >= o.trials;
    const bool time_spent = o.time_budget_s > 0 && elapsed() >= o.time_budget_s;
    if (trials_spent || time_spent) {
      sum.budget_spent = true;
      break;
    }
    const int i = scheduler.next();
    if (i < 0) break;
    const TuneTask& task = tasks[static_cast<size_t>(i)];
    TaskRun& run = runs[static_cast<size_t>(i)];
    int n = o.round_size;
    if (o.trials > 0) n = static_cast<int>(std::min<int64_t>(n, o.trials - sum.trials));
    std::vector<codegen::ScheduleConfig> configs;
    const bool first = scheduler.rounds(i) == 0;
    if (first) {
      // The reference, measured again in every run: it also gives the run's default time.
      configs.push_back(task.task.default_config);
      run.search.tried.insert(task.task.default_config.str());
      n = std::max(n - 1, 0);
    }
    for (codegen::ScheduleConfig& c : strategy->propose(run.search, n)) configs.push_back(std::move(c));
    if (configs.empty()) {
      scheduler.finish(i);  // every valid config is measured
      continue;
    }
    const std::vector<MeasureResult> results = measurer.measure(task, configs, run.best_s);
    double round_best = 0;
    for (size_t k = 0; k < configs.size(); ++k) {
      const MeasureResult& m = results[k];
      if (m.skipped) continue;
      Record r;
      r.key = task.key();
      r.template_name = task.task.template_name;
      r.target = o.target;
      r.config = configs[k];
      r.batch = o.batch;
      r.threads = o.measure.threads;
      r.times = m.times;
      r.median = m.ok() ? m.median : 0;
      r.error = m.ok() ? "" : (m.error.empty() ? "no time" : m.error);
      r.flops = task.task.flops;
      r.time = now_iso8601();
      writer.write(r);
      ++sum.trials;
      ++run.trials;
      run.search.tried.insert(configs[k].str());
      model.add(task, configs[k], r.ok() ? r.median : -1);
      if (!r.ok()) {
        ++sum.errors;
        progress.note(fmt::format("  {} [{}]: {}", task_label(task, 48), configs[k].str(),
                                  r.error.substr(0, r.error.find('\n'))));
        continue;
      }
      run.search.measured.emplace_back(configs[k], r.median);
      if (first && k == 0) run.default_s = r.median;  // this run's, over the records
      if (round_best == 0 || r.median < round_best) round_best = r.median;
    }
    if (round_best > 0 && (run.best_s == 0 || round_best < run.best_s)) run.best_s = round_best;
    scheduler.update(i, static_cast<int>(configs.size()), run.best_s);
    if (run.default_s > 0 && first) scheduler.calibrate(i, run.default_s);
    if (first && !results[0].ok()) scheduler.finish(i);  // no reference: nothing can be checked
    model.train();

    Progress p;
    p.task = i + 1;
    p.tasks = static_cast<int>(tasks.size());
    p.task_name = task_label(task, 48);
    p.trials = sum.trials;
    p.trial_budget = o.trials;
    p.errors = sum.errors;
    p.best_s = run.best_s;
    p.current_s = round_best;
    p.flops = task.task.flops;
    p.latency_s = scheduler.latency();
    double measured_default = 0;
    for (size_t t = 0; t < tasks.size(); ++t)
      measured_default += weights[t] * (runs[t].default_s > 0 ? runs[t].default_s
                                                               : scheduler.estimate(static_cast<int>(t)));
    p.default_latency_s = measured_default;
    p.elapsed_s = elapsed();
    double eta = -1;
    if (o.trials > 0 && sum.trials > 0)
      eta = p.elapsed_s / static_cast<double>(sum.trials) * static_cast<double>(o.trials - sum.trials);
    if (o.time_budget_s > 0) {
      const double left = std::max(0.0, o.time_budget_s - p.elapsed_s);
      eta = eta < 0 ? left : std::min(eta, left);
    }
    p.eta_s = eta;
    progress.update(p);
  }
  progress.finish();
  sum.seconds = elapsed();
  sum.build_s = measurer.build_seconds();
  sum.run_s = measurer.run_seconds();
  return sum;
}

}  // namespace yoloc::tuner
