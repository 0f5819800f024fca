// The tuning loop's overlap of building and measuring (TuneOptions::overlap), with a measurer
// that makes up times and logs when each build and each run starts and ends: the next round is
// built while the current one is measured; every built candidate is measured once (or its round
// dropped whole) and recorded; a deterministic search records the same with and without the
// overlap, early stopping included; budgets hold. And with the real CPU measurer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "tuner/search_strategy.h"
#include "tuner/tuner.h"
#include "tuner_test_util.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using namespace yoloc::testing;
using Clock = std::chrono::steady_clock;

/// Makes up times (1 ms / knob sum, or `constant_s` for every config), sleeping `build_s` per
/// build plus `compile_s` per candidate and compile job it leases (a batch of n candidates on j
/// jobs: ceil(n / j) x compile_s), and `run_s` per run plus `measure_s` per candidate; logs
/// what it builds and runs, with when, and the most compile jobs and builds at once.
class LoggingMeasurer : public Measurer {
 public:
  explicit LoggingMeasurer(int build_jobs = 1) : Measurer(build_jobs) {}
  struct Event {
    int batch;  // the build's number
    Clock::time_point start, end;
    std::string task;    // its task's key
    std::string config;  // its first config
  };
  double build_s = 0, run_s = 0, constant_s = 0, compile_s = 0, measure_s = 0;
  std::mutex mutex;
  std::vector<Event> builds, runs;
  std::vector<std::string> built, ran;  // "task key|config", in order
  int jobs_now = 0, builds_now = 0, max_jobs = 0, max_builds = 0;

 protected:
  struct Batch : BuiltBatch {
    int number = 0;
    const TuneTask* task = nullptr;
    std::vector<ScheduleConfig> configs;
  };
  std::unique_ptr<BuiltBatch> build_batch(const TuneTask& task,
                                          const std::vector<ScheduleConfig>& cs,
                                          BuildJobs& jobs) override {
    const JobLease lease = jobs.lease(static_cast<int>(cs.size()));
    const auto t0 = Clock::now();
    {
      const std::lock_guard<std::mutex> lock(mutex);
      jobs_now += lease.count();
      max_jobs = std::max(max_jobs, jobs_now);
      max_builds = std::max(max_builds, ++builds_now);
    }
    const size_t waves =
        (cs.size() + static_cast<size_t>(lease.count()) - 1) / static_cast<size_t>(lease.count());
    std::this_thread::sleep_for(
        std::chrono::duration<double>(build_s + compile_s * static_cast<double>(waves)));
    auto b = std::make_unique<Batch>();
    b->task = &task;
    b->configs = cs;
    const std::lock_guard<std::mutex> lock(mutex);
    jobs_now -= lease.count();
    --builds_now;
    b->number = static_cast<int>(builds.size());
    builds.push_back({b->number, t0, Clock::now(), task.key(), cs.empty() ? "" : cs[0].str()});
    for (const ScheduleConfig& c : cs) built.push_back(task.key() + "|" + c.str());
    return b;
  }
  std::vector<MeasureResult> run_batch(BuiltBatch& built_batch, double) override {
    const auto t0 = Clock::now();
    const Batch& b = static_cast<Batch&>(built_batch);
    std::this_thread::sleep_for(
        std::chrono::duration<double>(run_s + measure_s * static_cast<double>(b.configs.size())));
    std::vector<MeasureResult> out;
    const std::lock_guard<std::mutex> lock(mutex);
    for (const ScheduleConfig& c : b.configs) {
      double sum = 0;
      for (const auto& [k, v] : c.values()) sum += static_cast<double>(v);
      MeasureResult r;
      r.median = constant_s > 0 ? constant_s : 1e-3 / sum;
      r.times = {r.median};
      out.push_back(r);
      ran.push_back(b.task->key() + "|" + c.str());
    }
    runs.push_back(
        {b.number, t0, Clock::now(), b.task->key(), b.configs.empty() ? "" : b.configs[0].str()});
    return out;
  }
};

/// The conv task with the largest space of the small graph (a grid over it takes many rounds).
std::vector<TuneTask> one_conv_task() {
  const auto g = small_tuning_graph();
  std::vector<TuneTask> all = tuning_tasks(*g);
  std::vector<TuneTask> out;
  for (TuneTask& t : all)
    if (t.task.template_name == "conv" &&
        (out.empty() || t.task.space.size() > out[0].task.space.size())) {
      out.clear();
      out.push_back(std::move(t));
    }
  EXPECT_EQ(out.size(), 1u);
  return out;
}

TuneOptions options(const TempDir& dir, const std::string& file) {
  TuneOptions o;
  o.target = host_cpu_target();
  o.records = dir.path(file);
  o.strategy = "grid";
  o.round_size = 4;
  o.verify_rounds = 0;
  return o;
}

std::vector<std::string> recorded(const std::string& file) {
  std::vector<std::string> out;
  for (const Record& r : load_records(file).records) out.push_back(r.key + "|" + r.config.str());
  return out;
}

/// A config of t other than its default (the random strategy's first pick under `seed`), and a
/// record of it under `key` at `batch` that times it at 1 ms, written to o's records.
ScheduleConfig record_other_config(const TuneTask& t, const TuneOptions& o, const std::string& key,
                                   int64_t batch, uint32_t seed) {
  SearchState st;
  st.task = &t;
  st.tried.insert(t.task.default_config.str());
  const std::vector<ScheduleConfig> pick = make_strategy("random", nullptr, seed)->propose(st, 1);
  EXPECT_EQ(pick.size(), 1u);
  Record r;
  r.key = key;
  r.batch = batch;
  r.template_name = t.task.template_name;
  r.target = o.target;
  r.config = pick.at(0);
  r.times = {1e-3};
  r.median = 1e-3;
  RecordWriter(o.records).write(r);
  return r.config;
}

TEST(TunerPipeline, ANewBatchStartsFromTheNearestTunedBatchsBestConfig) {
  TempDir dir;
  std::vector<TuneTask> tasks = one_conv_task();
  // CPU workloads batch through strided views and carry no batch in their keys; give this one
  // a key of the CUDA form, which does (the measurer makes its times up either way).
  tasks[0].task.key = "cuda_conv2d_nhwc f16->f16 n1 c16 h8 w8 k16 3x3 s1x1 p1x1 d1x1 silu";
  const TuneTask& t = tasks[0];
  const auto batch = workload_key_batch(t.key());
  ASSERT_TRUE(batch);
  // A valid config other than the default, recorded for the workload at 4x the batch.
  TuneOptions o = options(dir, "transfer.jsonl");
  const ScheduleConfig pick =
      record_other_config(t, o, *workload_key_at_batch(t.key(), 4 * *batch), 4 * *batch, 7);
  o.trials = 4;  // one round
  ProgressDisplay quiet(stderr, false);
  LoggingMeasurer m;
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_EQ(s.transferred, 1);
  // The first round: the default, then the transferred config, then the search's.
  ASSERT_GE(m.ran.size(), 2u);
  EXPECT_EQ(m.ran[0], t.key() + "|" + t.task.default_config.str());
  EXPECT_EQ(m.ran[1], t.key() + "|" + pick.str());
  // With a record of its own batch the task searches as before.
  TuneOptions o2 = options(dir, "own.jsonl");
  record_other_config(t, o2, t.key(), *batch, 7);
  record_other_config(t, o2, *workload_key_at_batch(t.key(), 4 * *batch), 4 * *batch, 7);
  o2.trials = 4;
  LoggingMeasurer m2;
  EXPECT_EQ(tune(tasks, o2, m2, quiet).transferred, 0);
}

// A conv storing class scores (TaskInfo::twin_key) without records of its own starts from its
// twin's best config; once it has records it searches from them.
TEST(TunerPipeline, ATaskWithoutRecordsStartsFromItsTwinsBestConfig) {
  TempDir dir;
  std::vector<TuneTask> tasks = one_conv_task();
  const TuneTask& t = tasks[0];
  tasks[0].task.twin_key = t.key() + " (twin)";
  TuneOptions o = options(dir, "twin.jsonl");
  const ScheduleConfig pick = record_other_config(t, o, t.task.twin_key, 1, 11);
  o.trials = 4;  // one round
  ProgressDisplay quiet(stderr, false);
  LoggingMeasurer m;
  EXPECT_EQ(tune(tasks, o, m, quiet).transferred, 1);
  ASSERT_GE(m.ran.size(), 2u);
  EXPECT_EQ(m.ran[0], t.key() + "|" + t.task.default_config.str());
  EXPECT_EQ(m.ran[1], t.key() + "|" + pick.str());
  // Records of its own: no start from the twin.
  LoggingMeasurer m2;
  TuneOptions o2 = o;
  o2.trials = 8;
  EXPECT_EQ(tune(tasks, o2, m2, quiet).transferred, 0);
}

// A twin's best config that the task does not take as it is (a box pair needs the staged
// epilogue its twin may not have) starts it with one knob changed (codegen::twin_config): the
// first value of that knob's domain the task takes.
TEST(TunerPipeline, ATwinsConfigStartsTheTaskWithTheKnobItNeeds) {
  TempDir dir;
  std::vector<TuneTask> tasks = one_conv_task();
  TuneTask& t = tasks[0];
  t.task.twin_key = t.key() + " (twin)";
  TuneOptions o = options(dir, "twin-knob.jsonl");
  const ScheduleConfig pick = record_other_config(t, o, t.task.twin_key, 1, 11);
  // The task refuses the pick's value of a knob (one where the default differs from the pick).
  std::string name;
  for (const codegen::Knob& k : t.task.space.knobs)
    if (name.empty() && k.domain.size() > 1 && pick.get(k.name) != t.task.default_config.get(k.name))
      name = k.name;
  ASSERT_FALSE(name.empty());
  const int64_t refused = pick.get(name);
  const auto valid = t.task.valid;
  t.task.valid = [valid, name, refused](const ScheduleConfig& c) {
    return valid(c) && c.get(name) != refused;
  };
  std::optional<ScheduleConfig> want;
  for (const codegen::Knob& k : t.task.space.knobs)
    for (int64_t v : k.domain) {
      ScheduleConfig c = pick;
      c.set(k.name, v);
      if (!want && k.name == name && v != refused && t.task.valid(c)) want = c;
    }
  ASSERT_TRUE(want.has_value());
  o.trials = 4;  // one round
  ProgressDisplay quiet(stderr, false);
  LoggingMeasurer m;
  EXPECT_EQ(tune(tasks, o, m, quiet).transferred, 1);
  ASSERT_GE(m.ran.size(), 2u);
  EXPECT_EQ(m.ran[1], t.key() + "|" + want->str());
}

// --sweep KNOB: the first rounds measure the best recorded configs with each other value of the
// knob (those valid with it), right after the default, the best config's first; a knob no task
// has is an error.
TEST(TunerPipeline, ASweepMeasuresTheBestConfigsWithEachValueFirst) {
  TempDir dir;
  const std::vector<TuneTask> tasks = one_conv_task();
  const TuneTask& t = tasks[0];
  TuneOptions o = options(dir, "sweep.jsonl");
  // Two recorded configs: `best` (1 ms) and `second` (2 ms).
  SearchState st;
  st.task = &t;
  st.tried.insert(t.task.default_config.str());
  const std::vector<ScheduleConfig> picks = make_strategy("random", nullptr, 3)->propose(st, 2);
  ASSERT_EQ(picks.size(), 2u);
  const ScheduleConfig &best = picks[0], &second = picks[1];
  for (const auto& [cfg, s] : {std::pair{best, 1e-3}, std::pair{second, 2e-3}}) {
    Record r;
    r.key = t.key();
    r.template_name = t.task.template_name;
    r.target = o.target;
    r.config = cfg;
    r.times = {s};
    r.median = s;
    RecordWriter(o.records).write(r);
  }
  // A knob that `best` is valid with at another value.
  std::string knob;
  std::vector<ScheduleConfig> want;  // best with each other value, in the domain's order
  for (const codegen::Knob& k : t.task.space.knobs) {
    want.clear();
    for (int64_t v : k.domain) {
      ScheduleConfig c = best;
      c.set(k.name, v);
      if (v != best.get(k.name) && t.task.valid(c)) want.push_back(c);
    }
    if (!want.empty()) {
      knob = k.name;
      break;
    }
  }
  ASSERT_FALSE(knob.empty());
  o.sweep = knob;
  o.trials = 48;
  ProgressDisplay quiet(stderr, false);
  LoggingMeasurer m;
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_GE(s.swept, static_cast<int>(want.size()));
  ASSERT_GT(m.ran.size(), static_cast<size_t>(s.swept));
  EXPECT_EQ(m.ran[0], t.key() + "|" + t.task.default_config.str());
  // The swept configs come first (best or second with the knob changed), every `want` among
  // them, each before any of second's.
  std::set<std::string> of_best, of_second;
  for (int64_t v : t.task.space.find(knob)->domain) {
    ScheduleConfig b = best, c = second;
    b.set(knob, v);
    c.set(knob, v);
    of_best.insert(t.key() + "|" + b.str());
    of_second.insert(t.key() + "|" + c.str());
  }
  std::set<std::string> swept;
  bool seconds_begun = false;
  for (int i = 1; i <= s.swept; ++i) {
    const std::string& ran = m.ran[static_cast<size_t>(i)];
    swept.insert(ran);
    EXPECT_TRUE(of_best.contains(ran) || of_second.contains(ran)) << ran;
    if (of_best.contains(ran)) {
      EXPECT_FALSE(seconds_begun) << ran << " after one of the second best's";
    } else {
      seconds_begun = true;
    }
  }
  for (const ScheduleConfig& c : want) EXPECT_TRUE(swept.contains(t.key() + "|" + c.str()));
  TuneOptions bad = options(dir, "sweep.jsonl");
  bad.sweep = "no-such-knob";
  bad.trials = 4;
  LoggingMeasurer m2;
  EXPECT_THROW(tune(tasks, bad, m2, quiet), UserError);
}

TEST(TunerPipeline, BuildsTheNextRoundWhileTheCurrentOneIsMeasured) {
  TempDir dir;
  const std::vector<TuneTask> tasks = one_conv_task();
  TuneOptions o = options(dir, "r.jsonl");
  o.trials = 16;  // 4 rounds of 4
  LoggingMeasurer m;
  m.build_s = 0.05;
  m.run_s = 0.05;
  ProgressDisplay quiet(stderr, false);
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_EQ(s.trials, 16);
  ASSERT_EQ(m.builds.size(), 4u);
  ASSERT_EQ(m.runs.size(), 4u);
  for (size_t k = 0; k < m.runs.size(); ++k) EXPECT_EQ(m.runs[k].batch, static_cast<int>(k));
  for (size_t k = 0; k + 1 < m.builds.size(); ++k) {
    // Build k+1 starts before run k ends (and after build k ended: one build at a time).
    EXPECT_LT(m.builds[k + 1].start, m.runs[k].end) << "round " << k;
    EXPECT_GE(m.builds[k + 1].start, m.builds[k].end) << "round " << k;
  }
  // Three of the four builds ran while a round was measured (the first had nothing to hide
  // behind); sleeps last at least as long as asked.
  EXPECT_GT(s.build_overlap_s, 0.5 * 3 * 0.05);
  EXPECT_LE(s.build_overlap_s, s.build_s + 1e-9);
  EXPECT_GE(s.build_s, 4 * 0.05);
  EXPECT_GE(s.run_s, 4 * 0.05);
  EXPECT_EQ(recorded(o.records), m.ran);
}

TEST(TunerPipeline, RecordsTheSameAsOneRoundAfterTheOther) {
  TempDir dir;
  const std::vector<TuneTask> tasks = one_conv_task();
  ProgressDisplay quiet(stderr, false);
  // 1 build job: one round built ahead; 12 jobs and rounds of 4: three rounds built ahead.
  for (const int jobs : {1, 12}) {
    for (const bool constant : {false, true}) {
      SCOPED_TRACE(
          fmt::format("{} build jobs, {}", jobs,
                      constant ? "no gain after the first round: early stopping" : "gains"));
      std::vector<std::string> records[2];
      int dropped[2] = {0, 0};
      for (const bool overlap : {false, true}) {
        TuneOptions o = options(dir, fmt::format("r{}{}{}.jsonl", jobs, constant, overlap));
        o.trials = 40;
        o.early_stopping = 12;  // after the 4th round of a constant time
        o.overlap = overlap;
        LoggingMeasurer m(jobs);
        m.constant_s = constant ? 1e-3 : 0;
        const TuneSummary s = tune(tasks, o, m, quiet);
        records[overlap] = recorded(o.records);
        dropped[overlap] = s.dropped_rounds;
        EXPECT_EQ(records[overlap], m.ran);
        // Every build is run, but for the dropped rounds (their task stopped meanwhile).
        EXPECT_EQ(m.builds.size(), m.runs.size() + static_cast<size_t>(s.dropped_rounds));
        EXPECT_EQ(std::set<std::string>(m.ran.begin(), m.ran.end()).size(), m.ran.size());
        if (!overlap) {
          EXPECT_EQ(m.max_builds, 1);
        }
      }
      EXPECT_EQ(records[0], records[1]);
      EXPECT_EQ(dropped[0], 0);
      if (constant) {
        // 4 rounds of 4 (12 trials without a gain after the first); the rounds built ahead of
        // the 4th (1, or 3 = 12 jobs / 4) are dropped.
        EXPECT_EQ(records[1].size(), 16u);
        EXPECT_EQ(dropped[1], jobs == 1 ? 1 : 3);
      }
    }
  }
}

TEST(TunerPipeline, BuildsSeveralRoundsAtOnceToFillTheBuildJobs) {
  TempDir dir;
  const std::vector<TuneTask> tasks = one_conv_task();
  ProgressDisplay quiet(stderr, false);
  for (const bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "overlap" : "one round after the other");
    TuneOptions o = options(dir, fmt::format("r{}.jsonl", overlap));
    o.trials = 37;  // 9 rounds of 4 and one of 1
    o.early_stopping = 0;
    o.overlap = overlap;
    LoggingMeasurer m(12);
    m.compile_s = 0.03;  // each candidate of a round on a job of its own: 30 ms a round
    m.measure_s = 0.002;
    const TuneSummary s = tune(tasks, o, m, quiet);
    EXPECT_EQ(s.trials, 37);
    EXPECT_EQ(s.dropped_rounds, 0);
    EXPECT_EQ(m.builds.size(), 10u);
    EXPECT_EQ(m.runs.size(), 10u);
    EXPECT_EQ(recorded(o.records), m.ran);
    EXPECT_EQ(std::set<std::string>(m.ran.begin(), m.ran.end()).size(), 37u);
    // Rounds of 4 on 12 jobs: three rounds build at once (the first three, planned together),
    // or one when each round is built after the one before is measured.
    EXPECT_EQ(m.max_jobs, overlap ? 12 : 4);
    EXPECT_EQ(m.max_builds, overlap ? 3 : 1);
    // Builds running at once count once: 10 builds of 30 ms, at least 4 waves of 3 at once
    // (at most 300 ms one after the other).
    EXPECT_GE(s.build_s, overlap ? 4 * 0.03 : 10 * 0.03);
    if (overlap) {
      EXPECT_LT(s.build_s, 10 * 0.03);
    }
    EXPECT_LE(s.build_overlap_s, s.build_s + 1e-9);
  }
}

TEST(TunerPipeline, EveryTaskGetsItsFirstRoundBeforeAnyGetsASecond) {
  TempDir dir;
  const auto g = small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  ASSERT_GE(tasks.size(), 4u);
  TuneOptions o = options(dir, "r.jsonl");
  o.strategy = "random";
  o.round_size = 2;
  o.early_stopping = 0;
  o.trials = static_cast<int64_t>(tasks.size()) * 2 * 3;
  LoggingMeasurer m(8);  // four rounds built ahead
  m.compile_s = 0.005;
  ProgressDisplay quiet(stderr, false);
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_EQ(s.trials, o.trials);
  EXPECT_GE(m.max_builds, 2);
  // The first pass: every task once, each starting with its default config, before any second
  // round (the scheduler's order, kept although rounds are planned 4 ahead).
  ASSERT_GE(m.runs.size(), tasks.size());
  std::set<std::string> first;
  for (size_t k = 0; k < tasks.size(); ++k) {
    EXPECT_TRUE(first.insert(m.runs[k].task).second) << "run " << k << ": " << m.runs[k].task;
    const auto t = std::find_if(tasks.begin(), tasks.end(),
                                [&](const TuneTask& x) { return x.key() == m.runs[k].task; });
    ASSERT_NE(t, tasks.end());
    EXPECT_EQ(m.runs[k].config, t->task.default_config.str()) << m.runs[k].task;
  }
  EXPECT_EQ(first.size(), tasks.size());
  EXPECT_EQ(std::set<std::string>(m.ran.begin(), m.ran.end()).size(), m.ran.size());
  EXPECT_EQ(m.builds.size(), m.runs.size() + static_cast<size_t>(s.dropped_rounds));
}

TEST(TunerPipeline, TrialsInATimeBudgetRiseWithTheBuildJobs) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "times the tuner's own work against sleeps: sanitizers slow that work several "
                  "fold (the Release run checks it)";
#endif
  // Build-bound: compiling a candidate takes B = 100 ms of a job, measuring it M = 5 ms; rounds
  // of 4. With 4 jobs (as many as a round has candidates: one round builds at a time, as it did
  // whatever the jobs before rounds were built several at once), a round takes B to build while
  // the one before is measured (4M = 20 ms): 4 trials per B, 40 per second. With 8 jobs two
  // rounds build at once: 8 trials per B (2 x 4M of measuring, and the tuner's own work per
  // round, fit in it), 80 per second. In T = 1.5 s, less the first build with nothing to hide
  // behind (B): about 56 and 112.
  TempDir dir;
  const auto g = small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  ProgressDisplay quiet(stderr, false);
  constexpr double kB = 0.1, kM = 0.005, kT = 1.5;
  int64_t trials[2] = {0, 0};
  for (const int jobs : {4, 8}) {
    TuneOptions o = options(dir, fmt::format("r{}.jsonl", jobs));
    o.strategy = "random";
    o.early_stopping = 0;
    o.time_budget_s = kT;
    LoggingMeasurer m(jobs);
    m.compile_s = kB;
    m.measure_s = kM;
    const TuneSummary s = tune(tasks, o, m, quiet);
    trials[jobs == 8] = s.trials;
    EXPECT_TRUE(s.budget_spent);
    EXPECT_EQ(s.trials, static_cast<int64_t>(m.ran.size()));
    EXPECT_EQ(m.builds.size(), m.runs.size() + static_cast<size_t>(s.dropped_rounds));
    EXPECT_EQ(m.max_jobs, jobs);
    // The rounds under way at the end of the budget are measured: at most 2 + 1 past it.
    EXPECT_LT(s.seconds, kT + 2 * kB + 3 * 4 * kM + 0.3);
  }
  const double old_expected = (kT - kB) / kB * 4, new_expected = (kT - kB) / kB * 8;
  std::printf(
      "trials in %.1f s: %lld with 4 build jobs (expected about %.0f), %lld with 8 "
      "(about %.0f)\n",
      kT, static_cast<long long>(trials[0]), old_expected, static_cast<long long>(trials[1]),
      new_expected);
  // Sleeps last at least as long as asked: never more than expected (the rounds under way at
  // the end aside); on a loaded machine somewhat fewer.
  EXPECT_LE(static_cast<double>(trials[0]), old_expected + 2 * 4);
  EXPECT_GE(static_cast<double>(trials[0]), 0.7 * old_expected);
  EXPECT_LE(static_cast<double>(trials[1]), new_expected + 3 * 4);
  // Eight sleeping build threads on two busy cores wake late: on a loaded machine 8 jobs gave
  // 76 to 104 trials. One build job at a time would give at most 56 + 8 and a ratio of 1.0.
  EXPECT_GE(static_cast<double>(trials[1]), 0.6 * new_expected);
  EXPECT_GE(static_cast<double>(trials[1]), 1.25 * static_cast<double>(trials[0]));
}

TEST(TunerPipeline, EveryBuiltCandidateIsMeasuredOnceOverSeveralTasks) {
  TempDir dir;
  const auto g = small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  TuneOptions o = options(dir, "r.jsonl");
  o.strategy = "random";
  o.trials = 60;
  o.early_stopping = 8;
  o.verify_rounds = 2;
  LoggingMeasurer m;
  ProgressDisplay quiet(stderr, false);
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_EQ(s.trials + s.verify_trials, static_cast<int64_t>(m.ran.size()));
  EXPECT_EQ(m.builds.size(), m.runs.size() + static_cast<size_t>(s.dropped_rounds));
  // The search measures a config once (the re-measurement's come after it).
  const std::vector<std::string> search(m.ran.begin(), m.ran.begin() + s.trials);
  EXPECT_EQ(std::set<std::string>(search.begin(), search.end()).size(), search.size());
  EXPECT_EQ(recorded(o.records), m.ran);
  // The built candidates of the rounds measured are the ones measured, in order.
  std::set<int> ran_batches;
  for (const auto& e : m.runs) ran_batches.insert(e.batch);
  EXPECT_EQ(ran_batches.size(), m.runs.size());
  EXPECT_LE(s.trials, 60);
}

TEST(TunerPipeline, NoBuildStartsOnceTheTimeBudgetIsSpent) {
  TempDir dir;
  const std::vector<TuneTask> tasks = one_conv_task();
  // 1 build job: one round built ahead; 8 jobs and rounds of 4: two.
  for (const int jobs : {1, 8}) {
    SCOPED_TRACE(fmt::format("{} build jobs", jobs));
    TuneOptions o = options(dir, fmt::format("r{}.jsonl", jobs));
    o.time_budget_s = 0.5;
    o.early_stopping = 0;
    LoggingMeasurer m(jobs);
    m.build_s = 0.06;
    m.run_s = 0.04;
    ProgressDisplay quiet(stderr, false);
    const auto t0 = Clock::now();
    const TuneSummary s = tune(tasks, o, m, quiet);
    const auto secs = [&](Clock::time_point t) {
      return std::chrono::duration<double>(t - t0).count();
    };
    EXPECT_TRUE(s.budget_spent);
    ASSERT_FALSE(m.builds.empty());
    for (const auto& b : m.builds) EXPECT_LT(secs(b.start), 0.5 + 0.1);
    // The builds started within the budget are measured: nothing is left built.
    EXPECT_EQ(m.builds.size(), m.runs.size());
    EXPECT_EQ(s.trials, static_cast<int64_t>(m.ran.size()));
    // At most the rounds under way at the budget's end (the one measured and those built
    // ahead) are built and run past it.
    const int ahead = jobs == 1 ? 1 : 2;
    EXPECT_LT(s.seconds, 0.5 + m.build_s + (ahead + 1) * m.run_s + 0.5);
  }
}

TEST(TunerPipeline, TheCpuMeasurerOverlapsAndRecordsEveryCandidate) {
  TempDir dir;
  const auto g = small_tuning_graph();
  // The elementwise chain (a crash injected) and the 1x1 conv.
  std::vector<TuneTask> tasks;
  for (TuneTask& t : tuning_tasks(*g))
    if (t.task.template_name == "elementwise" || t.key().find(" 1x1 ") != std::string::npos)
      tasks.push_back(std::move(t));
  ASSERT_EQ(tasks.size(), 2u);
  // 3 rounds of 4 on 1 compiler, one round built ahead; 3 rounds of 2 on 4 compilers, two
  // rounds built at once (the CPU measurer's builds running side by side; one candidate per
  // shared object then, so fewer trials keep the compilations few).
  for (const int jobs : {1, 4}) {
    SCOPED_TRACE(fmt::format("{} build jobs", jobs));
    TuneOptions o = options(dir, fmt::format("r{}.jsonl", jobs));
    const int64_t trials = jobs == 1 ? 12 : 6;
    o.trials = trials;
    o.round_size = jobs == 1 ? 4 : 2;
    o.measure.repeats = 2;
    o.measure.min_repeat_s = 5e-3;  // runs long enough that a build hides behind one
    o.measure.timeout_s = 5;
    o.measure.build_jobs = jobs;
    o.measure.inject = "crash@elementwise:unroll=2";
    auto measurer = make_cpu_measurer(o.measure);
    ProgressDisplay quiet(stderr, false);
    const TuneSummary s = tune(tasks, o, *measurer, quiet);
    EXPECT_EQ(s.trials, trials);
    EXPECT_GT(s.build_overlap_s, 0);
    const std::vector<Record> rs = load_records(o.records).records;
    ASSERT_EQ(static_cast<int64_t>(rs.size()), trials);
    std::set<std::string> seen;
    int crashes = 0;
    for (const Record& r : rs) {
      EXPECT_TRUE(seen.insert(r.key + "|" + r.config.str()).second) << r.config.str();
      const bool crash = r.template_name == "elementwise" && r.config.get("unroll") == 2;
      crashes += crash;
      EXPECT_EQ(r.ok(), !crash) << r.key << " " << r.config.str() << ": " << r.error;
    }
    EXPECT_EQ(s.errors, crashes);
    if (jobs == 1) {
      EXPECT_EQ(crashes, 1);
    }
    EXPECT_EQ(measurer->worker_starts(), 1 + crashes);  // the first, and one after each crash
  }
}

}  // namespace
}  // namespace yoloc::tuner
