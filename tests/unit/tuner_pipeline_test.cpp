// The tuning loop's overlap of building and measuring (TuneOptions::overlap), with a measurer
// that makes up times and logs when each build and each run starts and ends: the next round is
// built while the current one is measured; every built candidate is measured once (or its round
// dropped whole) and recorded; a deterministic search records the same with and without the
// overlap, early stopping included; budgets hold. And with the real CPU measurer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "tuner/tuner.h"
#include "tuner_test_util.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using namespace yoloc::testing;
using Clock = std::chrono::steady_clock;

/// Makes up times (1 ms / knob sum, or `constant_s` for every config), sleeping `build_s` per
/// build and `run_s` per run; logs what it builds and runs, with when.
class LoggingMeasurer : public Measurer {
 public:
  struct Event {
    int batch;  // the build's number
    Clock::time_point start, end;
  };
  double build_s = 0, run_s = 0, constant_s = 0;
  std::mutex mutex;
  std::vector<Event> builds, runs;
  std::vector<std::string> built, ran;  // "task key|config", in order

 protected:
  struct Batch : BuiltBatch {
    int number = 0;
    const TuneTask* task = nullptr;
    std::vector<ScheduleConfig> configs;
  };
  std::unique_ptr<BuiltBatch> build_batch(const TuneTask& task,
                                          const std::vector<ScheduleConfig>& cs) override {
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(build_s));
    auto b = std::make_unique<Batch>();
    b->task = &task;
    b->configs = cs;
    const std::lock_guard<std::mutex> lock(mutex);
    b->number = static_cast<int>(builds.size());
    builds.push_back({b->number, t0, Clock::now()});
    for (const ScheduleConfig& c : cs) built.push_back(task.key() + "|" + c.str());
    return b;
  }
  std::vector<MeasureResult> run_batch(BuiltBatch& built_batch, double) override {
    const auto t0 = Clock::now();
    const Batch& b = static_cast<Batch&>(built_batch);
    std::this_thread::sleep_for(std::chrono::duration<double>(run_s));
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
    runs.push_back({b.number, t0, Clock::now()});
    return out;
  }
};

/// The conv task with the largest space of the small graph (a grid over it takes many rounds).
std::vector<TuneTask> one_conv_task() {
  const auto g = small_tuning_graph();
  std::vector<TuneTask> all = tuning_tasks(*g);
  std::vector<TuneTask> out;
  for (TuneTask& t : all)
    if (t.task.template_name == "conv" && (out.empty() || t.task.space.size() >
                                                              out[0].task.space.size())) {
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
  for (const bool constant : {false, true}) {
    SCOPED_TRACE(constant ? "no gain after the first round: early stopping" : "gains");
    std::vector<std::string> records[2];
    int dropped[2] = {0, 0};
    for (const bool overlap : {false, true}) {
      TuneOptions o = options(dir, fmt::format("r{}{}.jsonl", constant, overlap));
      o.trials = 40;
      o.early_stopping = 12;  // after the 4th round of a constant time
      o.overlap = overlap;
      LoggingMeasurer m;
      m.constant_s = constant ? 1e-3 : 0;
      const TuneSummary s = tune(tasks, o, m, quiet);
      records[overlap] = recorded(o.records);
      dropped[overlap] = s.dropped_rounds;
      EXPECT_EQ(records[overlap], m.ran);
      // Every build is run, but for the dropped rounds (their task stopped meanwhile).
      EXPECT_EQ(m.builds.size(), m.runs.size() + static_cast<size_t>(s.dropped_rounds));
      EXPECT_EQ(std::set<std::string>(m.ran.begin(), m.ran.end()).size(), m.ran.size());
    }
    EXPECT_EQ(records[0], records[1]);
    EXPECT_EQ(dropped[0], 0);
    if (constant) {
      // 4 rounds of 4 (12 trials without a gain after the first), the 5th built and dropped.
      EXPECT_EQ(records[1].size(), 16u);
      EXPECT_EQ(dropped[1], 1);
    }
  }
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
  TuneOptions o = options(dir, "r.jsonl");
  o.time_budget_s = 0.5;
  o.early_stopping = 0;
  LoggingMeasurer m;
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
  // The last build started within the budget is measured: nothing is left built.
  EXPECT_EQ(m.builds.size(), m.runs.size());
  EXPECT_EQ(s.trials, static_cast<int64_t>(m.ran.size()));
  // At most the last round's build (under way at the budget's end) and run past it.
  EXPECT_LT(s.seconds, 0.5 + m.build_s + m.run_s + 0.5);
}

TEST(TunerPipeline, TheCpuMeasurerOverlapsAndRecordsEveryCandidate) {
  TempDir dir;
  const auto g = small_tuning_graph();
  // The elementwise chain (a crash injected) and the 1x1 conv: 3 rounds of 4.
  std::vector<TuneTask> tasks;
  for (TuneTask& t : tuning_tasks(*g))
    if (t.task.template_name == "elementwise" || t.key().find(" 1x1 ") != std::string::npos)
      tasks.push_back(std::move(t));
  ASSERT_EQ(tasks.size(), 2u);
  TuneOptions o = options(dir, "r.jsonl");
  o.trials = 12;
  o.measure.repeats = 2;
  o.measure.min_repeat_s = 5e-3;  // runs long enough that a build hides behind one
  o.measure.timeout_s = 5;
  o.measure.build_jobs = 1;
  o.measure.inject = "crash@elementwise:unroll=2";
  auto measurer = make_cpu_measurer(o.measure);
  ProgressDisplay quiet(stderr, false);
  const TuneSummary s = tune(tasks, o, *measurer, quiet);
  EXPECT_EQ(s.trials, 12);
  EXPECT_EQ(s.errors, 1);
  EXPECT_GT(s.build_overlap_s, 0);
  EXPECT_EQ(measurer->worker_starts(), 2);  // the first, and one after the crash
  const std::vector<Record> rs = load_records(o.records).records;
  ASSERT_EQ(rs.size(), 12u);
  std::set<std::string> seen;
  for (const Record& r : rs) {
    EXPECT_TRUE(seen.insert(r.key + "|" + r.config.str()).second) << r.config.str();
    const bool crash = r.template_name == "elementwise" && r.config.get("unroll") == 2;
    EXPECT_EQ(r.ok(), !crash) << r.key << " " << r.config.str() << ": " << r.error;
  }
}

}  // namespace
}  // namespace yoloc::tuner
