#include "tuner/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <system_error>
#include <thread>

#include "core/error.h"
#include "tuner/cost_model.h"
#include "tuner/report.h"
#include "tuner/search_strategy.h"
#include "tuner/task_scheduler.h"

namespace yoloc::tuner {
namespace {

using Clock = std::chrono::steady_clock;
using codegen::ScheduleConfig;

/// What this run knows of one task.
struct TaskRun {
  SearchState search;
  double best_s = 0, default_s = 0;
  bool planned = false;  // its first round of this run (the one with the default) is planned
  bool visited = false;  // measured in this run (its reference exists)
  // The best config of the workload at the nearest tuned batch, for a task without records of
  // its own: a candidate of its first round, next to the default.
  std::optional<ScheduleConfig> transfer;
  // The sweep's configs (TuneOptions::sweep) not planned yet, measured ahead of the search's.
  std::deque<ScheduleConfig> sweep;
  // The configs the records rank best for this task (ranked_records; the first is what compile
  // takes), the default aside: re-measured at the end with this run's best, so that the ranking,
  // which relates runs through their defaults' times, compares them in one run (a config whose
  // only run timed the default slow looks faster than it is).
  std::vector<ScheduleConfig> incumbents;
};

/// Candidates of one task: planned, built, then measured and recorded.
struct Round {
  int task = -1;
  std::vector<ScheduleConfig> configs;
  bool first = false;      // the task's first round of this run: starts with its default config
  bool verifying = false;  // of the final re-measurement
  std::unique_ptr<BuiltBatch> built;
};

/// A round planned and not measured yet: being built, built, or dropped.
struct InFlight {
  Round round;
  std::thread builder;
  std::exception_ptr error;  // of the build
  bool dropped = false;      // its task stopped: never measured, its build only waited for
};

class Tuner {
 public:
  Tuner(const std::vector<TuneTask>& tasks, const TuneOptions& o, Measurer& measurer,
        ProgressDisplay& progress)
      : tasks_(tasks),
        o_(o),
        measurer_(measurer),
        progress_(progress),
        writer_(o.records),
        run_id_(new_run_id()),
        runs_(tasks.size()),
        scheduler_(weights(tasks), estimates(tasks), scheduler_options(o)) {}

  TuneSummary run();

 private:
  // This run's Record::run: its start time and 32 random bits (runs started in the same second on
  // several machines stay apart).
  static std::string new_run_id() {
    std::random_device rd;
    return fmt::format("{}-{:08x}", now_iso8601(), rd());
  }
  static std::vector<double> weights(const std::vector<TuneTask>& tasks) {
    std::vector<double> w;
    for (const TuneTask& t : tasks) w.push_back(t.occurrences());
    return w;
  }
  static std::vector<double> estimates(const std::vector<TuneTask>& tasks) {
    std::vector<double> e;
    for (const TuneTask& t : tasks) e.push_back(estimated_seconds(t));
    return e;
  }
  static TaskScheduler::Options scheduler_options(const TuneOptions& o) {
    TaskScheduler::Options so;
    so.early_stopping = o.early_stopping;
    return so;
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// Seconds the search may use (the rest of a time budget is the re-measurement's); 0: none.
  double search_budget() const {
    const bool verify = o_.verify_rounds > 0 && o_.verify_top > 0;
    return o_.time_budget_s * (verify ? 1 - std::clamp(o_.verify_share, 0.0, 1.0) : 1.0);
  }

  bool trials_spent() const { return o_.trials > 0 && sum_.trials + pending_trials_ >= o_.trials; }
  bool search_time_spent() const { return o_.time_budget_s > 0 && elapsed() >= search_budget(); }

  void resume(const RecordSet& existing);
  /// Runs the rounds plan() gives until it has none: each is built, measured and taken in;
  /// with o_.overlap, the next depth() rounds are planned and built (each on a thread of its
  /// own) while the current one is measured.
  void pipeline(bool verifying);
  /// Rounds built ahead of the one measured: enough that their candidates fill the measurer's
  /// build jobs (one without o_.overlap: none).
  int depth() const;
  /// Starts building f.round on a thread of its own (or builds it here when no thread can be
  /// had); an exception of the build is kept in f.error.
  void start_build(InFlight& f);
  /// The next round (verifying: of the re-measurement); nullopt when the budget is spent, every
  /// task has stopped, or the trials left are all under way.
  std::optional<Round> plan(bool verifying);
  std::optional<Round> plan_search();
  // Fills TaskRun::sweep for TuneOptions::sweep.
  void plan_sweep();
  /// Measures a built round and takes in its results (but for the cost model's training).
  void measure(Round& r);
  /// A built round not measured (its task stopped while it was built): the scheduler's round
  /// and its trials are given back.
  void drop(Round& r);
  /// Plans the re-measurement's rounds (verify_plan_).
  void plan_verify();
  /// Appends the results to the records and to what the run knows; returns the round's best.
  double record(int i, const std::vector<ScheduleConfig>& configs,
                const std::vector<MeasureResult>& results, bool verifying);
  void show(int i, double current_s);

  const std::vector<TuneTask>& tasks_;
  const TuneOptions& o_;
  Measurer& measurer_;
  ProgressDisplay& progress_;
  RecordWriter writer_;
  const std::string run_id_;  // Record::run of every record this run writes
  std::vector<TaskRun> runs_;
  TaskScheduler scheduler_;
  CostModel model_;
  std::unique_ptr<SearchStrategy> strategy_;
  TuneSummary sum_;
  int64_t pending_trials_ = 0;      // configs of the search's rounds planned, not yet measured
  std::vector<Round> verify_plan_;  // the re-measurement's rounds, taken from the front
  size_t verify_next_ = 0;
  Clock::time_point start_ = Clock::now();
};

void Tuner::resume(const RecordSet& existing) {
  const RecordQuery query{o_.target, o_.batch, o_.measure.threads};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    runs_[i].search.task = &tasks_[i];
    index[tasks_[i].key()] = i;
  }
  sum_.stale = existing.stale;
  for (const Record& r : existing.records) {
    const auto it = index.find(r.key);
    // In-model records time a config in other conditions: not for the search.
    if (it == index.end() || !record_matches(r, query) || r.mode != "kernel") continue;
    const TuneTask& task = tasks_[it->second];
    TaskRun& run = runs_[it->second];
    // A record may predate knobs added since (Knob::absent): read in today's form. One whose
    // config the template's rules no longer admit (its shared memory capped since, ...) is not
    // resumed: neither a best to beat nor one to re-measure.
    const ScheduleConfig cfg = task.task.space.complete(r.config);
    if (!cfg.in_space(task.task.space) || !task.task.valid(cfg)) continue;
    ++sum_.resumed;
    run.search.tried.insert(cfg.str());
    model_.add(task, cfg, r.ok() ? r.median : -1);
    if (!r.ok()) continue;
    run.search.measured.emplace_back(cfg, r.median);
    if (run.best_s == 0 || r.median < run.best_s) run.best_s = r.median;
    if (cfg == task.task.default_config && (run.default_s == 0 || r.median < run.default_s))
      run.default_s = r.median;
  }
  for (size_t i = 0; i < tasks_.size(); ++i) scheduler_.seed(static_cast<int>(i), runs_[i].best_s);
  std::map<std::string, codegen::ScheduleSpace> spaces;
  for (const TuneTask& t : tasks_) {
    spaces.emplace(t.key(), t.task.space);
    if (!t.task.twin_key.empty()) spaces.emplace(t.task.twin_key, t.task.space);
  }
  std::vector<Record> completed = existing.records;
  complete_configs(completed, spaces);
  const auto ranked = ranked_records(completed, query, static_cast<size_t>(o_.verify_top));
  // The tasks each ranked key serves: its own, and a task without records of its own whose
  // twin it is (TaskInfo::twin_key), which starts from the twin's best configs: its first round
  // takes the best (the search breeds from it), the final re-measurement the others.
  std::multimap<std::string, std::pair<size_t, bool>> served;  // key -> (task, as its twin)
  for (size_t i = 0; i < tasks_.size(); ++i) {
    served.emplace(tasks_[i].key(), std::pair(i, false));
    const std::string& twin = tasks_[i].task.twin_key;
    if (!twin.empty() && !ranked.contains(tasks_[i].key()))
      served.emplace(twin, std::pair(i, true));
  }
  for (const auto& [key, rs] : ranked) {
    const auto [from, to] = served.equal_range(key);
    for (auto it = from; it != to; ++it) {
      const auto [i, as_twin] = it->second;
      const TaskInfo& task = tasks_[i].task;
      for (const Record& r : rs) {  // (their configs completed above)
        if (r.mode != "kernel" || !r.config.in_space(task.space)) continue;
        // A twin's config with the epilogue the task needs (codegen::twin_config).
        const std::optional<ScheduleConfig> cfg =
            as_twin                ? codegen::twin_config(task.space, r.config, task.valid)
            : task.valid(r.config) ? std::optional<ScheduleConfig>(r.config)
                                   : std::nullopt;
        if (!cfg || *cfg == task.default_config) continue;
        if (as_twin && !runs_[i].transfer) {
          runs_[i].transfer = *cfg;
          ++sum_.transferred;
        } else {
          runs_[i].incumbents.push_back(*cfg);
        }
      }
    }
  }
  // A task new to the file (another batch of a tuned model) starts where compile would: from its
  // workload's best config at the nearest tuned batch. The search then breeds from it.
  std::set<std::string> fresh;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (runs_[i].search.measured.empty()) fresh.insert(tasks_[i].key());
  for (const auto& [key, r] : nearest_batch_records(existing.records, query, fresh)) {
    const size_t i = index.at(key);
    if (runs_[i].transfer) continue;  // its twin's best at this batch
    const TaskInfo& task = tasks_[i].task;
    const ScheduleConfig cfg = task.space.complete(r.config);
    if (!cfg.in_space(task.space) || !task.valid(cfg) || cfg == task.default_config) continue;
    runs_[i].transfer = cfg;
    ++sum_.transferred;
  }
  if (!o_.sweep.empty()) plan_sweep();
  if (sum_.resumed > 0 || sum_.stale > 0)
    progress_.note(
        fmt::format("resuming from {}: {} records of these tasks ({} of other "
                    "versions ignored)",
                    o_.records, sum_.resumed, sum_.stale));
  if (sum_.transferred > 0)
    progress_.note(
        fmt::format("{} tasks start from their best config at the nearest tuned batch "
                    "or their twin's (a conv storing class scores or boxes)",
                    sum_.transferred));
  if (sum_.swept > 0)
    progress_.note(
        fmt::format("sweep of '{}': {} configs first (the best measured ones with "
                    "each other value)",
                    o_.sweep, sum_.swept));
}

void Tuner::plan_sweep() {
  bool any = false;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskInfo& task = tasks_[i].task;
    const codegen::Knob* knob = task.space.find(o_.sweep);
    if (!knob) continue;
    any = true;
    TaskRun& run = runs_[i];
    std::vector<std::pair<ScheduleConfig, double>> best = run.search.measured;
    std::stable_sort(best.begin(), best.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    // For each value v, the best configs that take it (valid with v set on them); those
    // measured with v already count among them. The best of each value first, then the next.
    std::vector<std::vector<ScheduleConfig>> ranks(kSweepTop);
    for (int64_t v : knob->domain) {
      size_t taken = 0;
      for (const auto& [measured, s] : best) {
        if (taken == ranks.size()) break;
        ScheduleConfig c = measured;
        c.set(o_.sweep, v);
        if (task.valid(c)) ranks[taken++].push_back(std::move(c));
      }
    }
    std::set<std::string> planned;
    for (std::vector<ScheduleConfig>& rank : ranks) {
      for (ScheduleConfig& c : rank) {
        if (run.search.tried.contains(c.str()) || !planned.insert(c.str()).second) continue;
        run.sweep.push_back(std::move(c));
        ++sum_.swept;
      }
    }
  }
  if (!any) user_error("--sweep {}: no task being tuned has a knob '{}'", o_.sweep, o_.sweep);
}

double Tuner::record(int i, const std::vector<ScheduleConfig>& configs,
                     const std::vector<MeasureResult>& results, bool verifying) {
  const TuneTask& task = tasks_[static_cast<size_t>(i)];
  TaskRun& run = runs_[static_cast<size_t>(i)];
  double best = 0;
  for (size_t k = 0; k < configs.size(); ++k) {
    const MeasureResult& m = results[k];
    if (m.skipped) continue;
    Record r;
    r.key = task.key();
    r.template_name = task.task.template_name;
    r.target = o_.target;
    r.config = configs[k];
    r.batch = o_.batch;
    r.threads = o_.measure.threads;
    r.clock = o_.measure.cpu_clock && o_.measure.threads == 1 ? "cpu" : "wall";
    r.times = m.times;
    r.median = m.ok() ? m.median : 0;
    r.error = m.ok() ? "" : (m.error.empty() ? "no time" : m.error);
    r.flops = task.task.flops;
    r.time = now_iso8601();
    r.run = run_id_;
    r.is_default = configs[k] == task.task.default_config;
    writer_.write(r);
    ++(verifying ? sum_.verify_trials : sum_.trials);
    if (!verifying) {
      run.search.tried.insert(configs[k].str());
      model_.add(task, configs[k], r.ok() ? r.median : -1);
    }
    if (!r.ok()) {
      ++sum_.errors;
      progress_.note(fmt::format("  {} [{}]: {}", task_label(task, 48), configs[k].str(),
                                 r.error.substr(0, r.error.find('\n'))));
      continue;
    }
    if (!verifying) run.search.measured.emplace_back(configs[k], r.median);
    if (best == 0 || r.median < best) best = r.median;
  }
  return best;
}

std::optional<Round> Tuner::plan(bool verifying) {
  if (!verifying) return plan_search();
  if (verify_next_ == verify_plan_.size()) return std::nullopt;
  if (o_.time_budget_s > 0 && elapsed() >= o_.time_budget_s) return std::nullopt;
  return std::move(verify_plan_[verify_next_++]);
}

std::optional<Round> Tuner::plan_search() {
  for (;;) {
    if (trials_spent() || search_time_spent()) return std::nullopt;
    const int i = scheduler_.next();
    if (i < 0) return std::nullopt;
    const TuneTask& task = tasks_[static_cast<size_t>(i)];
    TaskRun& run = runs_[static_cast<size_t>(i)];
    int n = o_.round_size;
    if (o_.trials > 0)
      n = static_cast<int>(std::min<int64_t>(n, o_.trials - sum_.trials - pending_trials_));
    Round r;
    r.task = i;
    r.first = !run.planned;
    // A config planned ahead of the search, where it is untried and the round has room.
    const auto take = [&](const ScheduleConfig& c) {
      if (n == 0 || !run.search.tried.insert(c.str()).second) return;
      r.configs.push_back(c);
      --n;
    };
    if (r.first) {
      // The reference, measured again in every run: it also gives the run's default time.
      r.configs.push_back(task.task.default_config);
      run.search.tried.insert(task.task.default_config.str());
      n = std::max(n - 1, 0);
      if (run.transfer) take(*run.transfer);
    }
    for (; n > 0 && !run.sweep.empty(); run.sweep.pop_front()) take(run.sweep.front());
    for (ScheduleConfig& c : strategy_->propose(run.search, n)) r.configs.push_back(std::move(c));
    if (r.configs.empty()) {
      scheduler_.finish(i);  // every valid config is measured or under way
      continue;
    }
    // Under way counts as tried: the next round, planned before this one's results are in,
    // proposes others.
    for (const ScheduleConfig& c : r.configs) run.search.tried.insert(c.str());
    run.planned = true;
    scheduler_.begin(i);
    pending_trials_ += static_cast<int64_t>(r.configs.size());
    return r;
  }
}

void Tuner::drop(Round& r) {
  ++sum_.dropped_rounds;
  if (r.verifying) return;
  TaskRun& run = runs_[static_cast<size_t>(r.task)];
  for (const ScheduleConfig& c : r.configs) run.search.tried.erase(c.str());
  if (r.first) run.planned = false;
  scheduler_.drop(r.task);
  pending_trials_ -= static_cast<int64_t>(r.configs.size());
}

void Tuner::measure(Round& r) {
  const int i = r.task;
  TaskRun& run = runs_[static_cast<size_t>(i)];
  // The search ends at its share of the budget, the re-measurement at the budget.
  if (o_.time_budget_s > 0) {
    const double s = r.verifying ? o_.time_budget_s : search_budget();
    measurer_.set_deadline(
        start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
  }
  const std::vector<MeasureResult> results = measurer_.run(*r.built, r.verifying ? 0 : run.best_s);
  r.built.reset();
  if (r.verifying) {
    show(i, record(i, r.configs, results, true));
    return;
  }
  pending_trials_ -= static_cast<int64_t>(r.configs.size());
  run.visited = true;
  const double round_best = record(i, r.configs, results, false);
  if (r.first && results[0].ok()) run.default_s = results[0].median;  // this run's, over records
  if (round_best > 0 && (run.best_s == 0 || round_best < run.best_s)) run.best_s = round_best;
  scheduler_.update(i, static_cast<int>(r.configs.size()), run.best_s);
  if (r.first && run.default_s > 0) scheduler_.calibrate(i, run.default_s);
  if (r.first && !results[0].ok()) scheduler_.finish(i);  // no reference: nothing can be checked
  if (std::all_of(results.begin(), results.end(), [](const auto& m) { return m.skipped; }))
    scheduler_.finish(i);  // the task cannot be measured
  show(i, round_best);
}

int Tuner::depth() const {
  if (!o_.overlap) return 0;
  const int jobs = measurer_.build_jobs(), size = std::max(1, o_.round_size);
  return std::max(1, (jobs + size - 1) / size);
}

void Tuner::start_build(InFlight& f) {
  // Its place in the queue for the compilers is taken here, in the order the rounds are
  // measured, not when its thread gets to it.
  const auto build = [this, place = measurer_.queue_build()](Round& r) {
    r.built = measurer_.build(tasks_[static_cast<size_t>(r.task)], r.configs, place);
  };
  try {
    f.builder = std::thread([&f, build] {
      try {
        build(f.round);
      } catch (...) {
        f.error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    build(f.round);  // no thread to be had: one after the other
  }
}

void Tuner::pipeline(bool verifying) {
  // The rounds planned and not yet measured, in the order they are measured (the order they
  // were planned): the first pass stays first, and so does each task's round with its default.
  std::deque<std::unique_ptr<InFlight>> queue;
  const auto finish = [](InFlight& f) {
    if (f.builder.joinable()) f.builder.join();
    if (f.error) std::rethrow_exception(f.error);
  };
  // Plans and starts building rounds until `n` are in flight (dropped ones aside: they only
  // wait for their builds to end, and the build jobs bound the compilers anyway).
  const auto fill = [&](size_t n) {
    while (static_cast<size_t>(std::count_if(queue.begin(), queue.end(),
                                             [](const auto& f) { return !f->dropped; })) < n) {
      std::optional<Round> r = plan(verifying);
      if (!r) return;
      queue.push_back(std::make_unique<InFlight>());
      queue.back()->round = std::move(*r);
      start_build(*queue.back());
    }
  };
  const size_t ahead = static_cast<size_t>(depth());
  try {
    for (;;) {
      fill(ahead + 1);  // the next to measure, and the ones built while it is measured
      if (queue.empty()) return;
      const std::unique_ptr<InFlight> current = std::move(queue.front());
      queue.pop_front();
      finish(*current);
      if (current->dropped) continue;
      measure(current->round);
      // Tasks may have stopped on these results: their rounds under way are dropped (given
      // back to the budget and the scheduler) and never measured, so the run measures no
      // further than it would have without building ahead.
      for (const auto& f : queue) {
        if (f->dropped || f->round.verifying || !scheduler_.done(f->round.task)) continue;
        drop(f->round);
        f->dropped = true;
      }
      if (current->round.verifying) continue;
      // The next round starts building before the model retrains on these results (which
      // takes milliseconds to tens of them, on the thread that measures): building ahead, it
      // is proposed by a model one round older.
      if (ahead > 0) fill(ahead + 1);
      model_.train();
    }
  } catch (...) {
    for (const auto& f : queue)
      if (f->builder.joinable()) f->builder.join();  // no build outlives the run
    throw;
  }
}

void Tuner::plan_verify() {
  // Heaviest tasks first: if the budget ends early, the ones that matter are done.
  std::vector<size_t> order;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (runs_[i].visited && runs_[i].default_s > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tasks_[a].occurrences() * runs_[a].best_s > tasks_[b].occurrences() * runs_[b].best_s;
  });
  if (order.empty()) return;
  progress_.note(
      fmt::format("re-measuring the default, the records' best and the {} best configs of {} "
                  "tasks, {} times each",
                  o_.verify_top, order.size(), o_.verify_rounds));
  for (size_t i : order) {
    TaskRun& run = runs_[i];
    const TuneTask& task = tasks_[i];
    std::vector<std::pair<double, ScheduleConfig>> best;
    for (const auto& [c, s] : run.search.measured)
      if (!(c == task.task.default_config)) best.emplace_back(s, c);
    std::sort(best.begin(), best.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ScheduleConfig> configs = {task.task.default_config};
    int top = 0;  // the verify_top best by their times, besides the default and the incumbents
    for (const auto& [s, c] : best) {
      if (top == o_.verify_top) break;
      if (std::none_of(configs.begin(), configs.end(), [&](const auto& x) { return x == c; })) {
        configs.push_back(c);
        ++top;
      }
    }
    for (const ScheduleConfig& c : run.incumbents)
      if (std::none_of(configs.begin(), configs.end(), [&](const auto& x) { return x == c; }))
        configs.push_back(c);
    if (configs.size() < 2) continue;
    for (int round = 0; round < o_.verify_rounds; ++round) {
      // A different order each round: no config always runs first (colder) or last.
      std::rotate(configs.begin(), configs.begin() + round % static_cast<int>(configs.size()),
                  configs.end());
      Round r;
      r.task = static_cast<int>(i);
      r.configs = configs;
      r.verifying = true;
      verify_plan_.push_back(std::move(r));
    }
  }
}

void Tuner::show(int i, double current_s) {
  const TuneTask& task = tasks_[static_cast<size_t>(i)];
  const TaskRun& run = runs_[static_cast<size_t>(i)];
  Progress p;
  p.task = i + 1;
  p.tasks = static_cast<int>(tasks_.size());
  p.task_name = task_label(task, 48);
  p.trials = sum_.trials + sum_.verify_trials;
  p.trial_budget = o_.trials > 0 ? o_.trials : 0;
  p.errors = sum_.errors;
  p.worker_starts = measurer_.worker_starts();
  p.best_s = run.best_s;
  p.current_s = current_s;
  p.flops = task.task.flops;
  p.latency_s = scheduler_.latency();
  for (size_t t = 0; t < tasks_.size(); ++t) {
    p.default_latency_s +=
        tasks_[t].occurrences() *
        (runs_[t].default_s > 0 ? runs_[t].default_s : scheduler_.estimate(static_cast<int>(t)));
  }
  p.elapsed_s = elapsed();
  double eta = -1;
  if (o_.trials > 0 && sum_.trials > 0)
    eta = p.elapsed_s / static_cast<double>(sum_.trials) *
          static_cast<double>(std::max<int64_t>(0, o_.trials - sum_.trials));
  if (o_.time_budget_s > 0) {
    const double left = std::max(0.0, o_.time_budget_s - p.elapsed_s);
    eta = eta < 0 ? left : std::min(eta, left);
  }
  p.eta_s = eta;
  progress_.update(p);
}

TuneSummary Tuner::run() {
  resume(load_records(o_.records));
  model_.train();
  strategy_ = make_strategy(o_.strategy, &model_, o_.seed);
  pipeline(false);
  sum_.budget_spent = (o_.trials > 0 && sum_.trials >= o_.trials) || search_time_spent();
  if (o_.verify_rounds > 0 && o_.verify_top > 0) {
    plan_verify();
    pipeline(true);
  }
  progress_.finish();
  sum_.seconds = elapsed();
  sum_.build_s = measurer_.build_seconds();
  sum_.run_s = measurer_.run_seconds();
  sum_.build_overlap_s = measurer_.build_overlap_seconds();
  sum_.worker_starts = measurer_.worker_starts();
  return sum_;
}

}  // namespace

TuneSummary tune(const std::vector<TuneTask>& tasks, const TuneOptions& o, Measurer& measurer,
                 ProgressDisplay& progress) {
  if (o.trials <= 0 && o.time_budget_s <= 0)
    user_error("tune needs a budget: --trials N or --time-budget DURATION");
  return Tuner(tasks, o, measurer, progress).run();
}

}  // namespace yoloc::tuner
