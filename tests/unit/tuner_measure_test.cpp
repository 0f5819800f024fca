// The tuning loop and the CPU measurer: real builds and runs on a small graph with injected
// crashing, hanging and wrong candidates (each must cost one failed record, and tuning goes
// on); resuming from a records file; budgets (with a measurer that only makes up times).
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <map>

#include "tuner/isolate.h"
#include "tuner/tuner.h"
#include "tuner_test_util.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using namespace yoloc::testing;

std::map<std::string, std::vector<Record>> by_template(const std::vector<Record>& rs) {
  std::map<std::string, std::vector<Record>> out;
  for (const Record& r : rs) out[r.template_name].push_back(r);
  return out;
}

// Options of a CPU-target run recording into dir's r.jsonl.
TuneOptions cpu_options(const TempDir& dir) {
  TuneOptions o;
  o.target = host_cpu_target();
  o.records = dir.path("r.jsonl");
  return o;
}

TEST(TunerMeasure, CrashHangAndWrongCandidatesAreErrorsAndTuningGoesOn) {
  TempDir dir;
  const auto g = small_tuning_graph();
  std::vector<TuneTask> all = tuning_tasks(*g);
  // The elementwise chain (unroll 1 is its default) and the 1x1 conv.
  std::vector<TuneTask> tasks;
  for (TuneTask& t : all)
    if (t.task.template_name == "elementwise" || t.key().find(" 1x1 ") != std::string::npos)
      tasks.push_back(std::move(t));
  ASSERT_EQ(tasks.size(), 2u);
  TuneOptions o = cpu_options(dir);
  o.trials = 10;
  o.round_size = 5;
  o.strategy = "grid";
  o.measure.timeout_s = 1;
  o.measure.repeats = 2;
  o.measure.min_repeat_s = 1e-4;
  o.measure.inject =
      "crash@elementwise:unroll=2;hang@elementwise:unroll=4;wrong@elementwise:unroll=8";
  o.verify_rounds = 0;
  auto measurer = make_cpu_measurer(o.measure);
  ProgressDisplay quiet(stderr, false);
  const TuneSummary s = tune(tasks, o, *measurer, quiet);
  EXPECT_EQ(s.trials, 10);
  EXPECT_EQ(s.errors, 3);

  const RecordSet set = load_records(o.records);
  auto groups = by_template(set.records);
  ASSERT_EQ(groups["elementwise"].size(), 5u);
  std::map<int64_t, std::string> outcome;
  for (const Record& r : groups["elementwise"]) {
    outcome[r.config.get("unroll")] = r.ok() ? "ok" : r.error;
    EXPECT_EQ(r.target, o.target);
    if (r.ok()) {
      EXPECT_EQ(r.times.size(), 2u);
      EXPECT_GT(r.median, 0);
    }
  }
  EXPECT_EQ(outcome[1], "ok");
  EXPECT_EQ(outcome[16], "ok");
  EXPECT_NE(outcome[2].find("crashed"), std::string::npos) << outcome[2];
  EXPECT_NE(outcome[4].find("timeout"), std::string::npos) << outcome[4];
  EXPECT_NE(outcome[8].find("wrong output"), std::string::npos) << outcome[8];
  // The conv task was measured too, with no failure.
  ASSERT_EQ(groups["conv"].size(), 5u);
  for (const Record& r : groups["conv"]) EXPECT_TRUE(r.ok()) << r.config.str() << ": " << r.error;
  EXPECT_EQ(groups["conv"][0].config, tasks[0].task.template_name == "conv"
                                          ? tasks[0].task.default_config
                                          : tasks[1].task.default_config);
}

TEST(TunerMeasure, AFailingReferenceStopsItsTaskOnly) {
  TempDir dir;
  const auto g = small_tuning_graph();
  std::vector<TuneTask> tasks = tuning_tasks(*g);
  TuneOptions o = cpu_options(dir);
  o.trials = 12;
  o.round_size = 4;
  o.strategy = "random";
  o.measure.repeats = 1;
  o.measure.min_repeat_s = 0;
  o.measure.inject = "crash@elementwise:unroll=1";  // the default
  o.verify_rounds = 0;
  auto measurer = make_cpu_measurer(o.measure);
  ProgressDisplay quiet(stderr, false);
  const TuneSummary s = tune(tasks, o, *measurer, quiet);
  const auto groups = by_template(load_records(o.records).records);
  // One failed record for the reference; its other candidates are not run nor recorded.
  ASSERT_EQ(groups.at("elementwise").size(), 1u);
  EXPECT_NE(groups.at("elementwise")[0].error.find("crashed"), std::string::npos);
  EXPECT_EQ(s.errors, 1);
  // The other tasks used the rest of the budget.
  size_t others = 0;
  for (const auto& [name, rs] : groups) others += name == "elementwise" ? 0 : rs.size();
  EXPECT_EQ(others, static_cast<size_t>(s.trials - 1));
}

/// Makes up times (no build, no run): seconds = 1 ms / unroll, plus the knob sum for others.
/// With seconds_each, each candidate takes that long, and the ones after the deadline are
/// skipped, as the workers do.
class FakeMeasurer : public Measurer {
 public:
  std::vector<std::string> measured;
  double seconds_each = 0;
  int skipped = 0;

 protected:
  struct Batch : BuiltBatch {
    const TuneTask* task;
    std::vector<ScheduleConfig> configs;
  };
  std::unique_ptr<BuiltBatch> build_batch(const TuneTask& task,
                                          const std::vector<ScheduleConfig>& cs,
                                          BuildJobs&) override {
    auto b = std::make_unique<Batch>();
    b->task = &task;
    b->configs = cs;
    return b;
  }
  std::vector<MeasureResult> run_batch(BuiltBatch& built, double) override {
    const TuneTask& task = *static_cast<Batch&>(built).task;
    const std::vector<ScheduleConfig>& cs = static_cast<Batch&>(built).configs;
    if (!seen_.count(task.key())) {
      EXPECT_EQ(cs.at(0), task.task.default_config)
          << "a task's first round starts with its default";
      seen_.insert(task.key());
    }
    std::vector<MeasureResult> out;
    for (const ScheduleConfig& c : cs) {
      if (!out.empty() && deadline() && std::chrono::steady_clock::now() >= *deadline()) {
        MeasureResult r;
        r.error = "not run: the time budget ended";
        r.skipped = true;
        out.push_back(r);
        ++skipped;
        continue;
      }
      if (seconds_each > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds_each));
      double sum = 0;
      for (const auto& [k, v] : c.values()) sum += static_cast<double>(v);
      MeasureResult r;
      r.median = 1e-3 / sum;
      r.times = {r.median};
      out.push_back(r);
      measured.push_back(c.str());
    }
    return out;
  }

 private:
  std::set<std::string> seen_;
};

// The elementwise chain of small_tuning_graph() (unroll 1 to 16, 1 its default), alone (its
// task points into g).
std::vector<TuneTask> elementwise_task(const Graph& g) {
  std::vector<TuneTask> tasks;
  for (TuneTask& t : tuning_tasks(g))
    if (t.task.template_name == "elementwise") tasks.push_back(std::move(t));
  return tasks;
}

TEST(TunerLoop, ResumesWithoutMeasuringAConfigTwice) {
  TempDir dir;
  const auto g = small_tuning_graph();
  std::vector<TuneTask> tasks = elementwise_task(*g);
  ASSERT_EQ(tasks.size(), 1u);
  TuneOptions o = cpu_options(dir);
  o.trials = 3;
  o.strategy = "grid";
  o.verify_rounds = 0;
  ProgressDisplay quiet(stderr, false);
  std::multiset<std::string> all;
  int64_t total = 0;
  for (int run = 0; run < 3; ++run) {
    FakeMeasurer m;
    const TuneSummary s = tune(tasks, o, m, quiet);
    EXPECT_EQ(s.resumed, static_cast<int>(total));
    total += s.trials;
    all.insert(m.measured.begin(), m.measured.end());
    if (run == 2) {
      // The space (5 configs) is used up: only the reference is measured again.
      EXPECT_EQ(s.trials, 1);
      EXPECT_FALSE(s.budget_spent);
    }
  }
  // Five configs in all, the default measured once per run.
  const std::string def = tasks[0].task.default_config.str();
  EXPECT_EQ(all.count(def), 3u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 5u);
  EXPECT_EQ(all.size(), 7u);
  EXPECT_EQ(static_cast<int64_t>(load_records(o.records).records.size()), total);
}

TEST(TunerLoop, FinalRemeasurementTakesTheDefaultAndTheBest) {
  TempDir dir;
  const auto g = small_tuning_graph();
  std::vector<TuneTask> tasks = elementwise_task(*g);
  TuneOptions o = cpu_options(dir);
  o.trials = 5;  // the whole space: unroll 1 (default), 2, 4, 8, 16
  o.strategy = "grid";
  o.verify_top = 2;
  o.verify_rounds = 3;
  ProgressDisplay quiet(stderr, false);
  FakeMeasurer m;
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_EQ(s.trials, 5);
  EXPECT_EQ(s.verify_trials, 9);
  const std::vector<Record> rs = load_records(o.records).records;
  ASSERT_EQ(rs.size(), 14u);
  // The fake times are 1 ms / unroll: the best two are 16 and 8.
  std::multiset<int64_t> again;
  for (size_t i = 5; i < rs.size(); ++i) again.insert(rs[i].config.get("unroll"));
  EXPECT_EQ(again, (std::multiset<int64_t>{1, 1, 1, 8, 8, 8, 16, 16, 16}));
}

// The config the records rank best (what compile takes: by times relative to each run's default)
// is re-measured with this run's best, though this run's search found faster ones: the ranking
// then compares them in one run. Without it, an incumbent whose old run flattered it (a slower
// default that run) kept winning over a faster config measured later.
TEST(TunerLoop, FinalRemeasurementTakesTheIncumbentToo) {
  TempDir dir;
  const auto g = small_tuning_graph();
  std::vector<TuneTask> tasks = elementwise_task(*g);
  TuneOptions o = cpu_options(dir);
  o.trials = 3;  // unroll 1 (default), 2, 4: the incumbent is 4
  o.strategy = "grid";
  o.verify_rounds = 0;
  ProgressDisplay quiet(stderr, false);
  FakeMeasurer first;
  tune(tasks, o, first, quiet);
  o.trials = 5;  // now 8 and 16 too, both faster (1 ms / unroll)
  o.verify_top = 1;
  o.verify_rounds = 1;
  FakeMeasurer again;
  const TuneSummary s = tune(tasks, o, again, quiet);
  EXPECT_EQ(s.verify_trials, 3);  // the default, the incumbent and this run's best
  const std::multiset<std::string> m(again.measured.begin(), again.measured.end());
  codegen::ScheduleConfig incumbent = tasks[0].task.default_config;
  incumbent.set("unroll", 4);
  EXPECT_EQ(m.count(incumbent.str()), 1u);
  incumbent.set("unroll", 16);
  EXPECT_EQ(m.count(incumbent.str()), 2u);  // searched, and re-measured
}

// Records of a config that the template's rules admitted when it was measured and no longer do
// (a limit tightened since): not resumed, so neither the best to beat nor re-measured (a real
// measurer refuses an invalid config).
TEST(TunerLoop, RecordsTheRulesNoLongerAdmitAreNotResumed) {
  TempDir dir;
  const auto g = small_tuning_graph();
  std::vector<TuneTask> tasks = elementwise_task(*g);
  ASSERT_EQ(tasks.size(), 1u);
  TuneOptions o = cpu_options(dir);
  o.trials = 5;  // the whole space: unroll 1 (default), 2, 4, 8, 16 (the fastest)
  o.strategy = "grid";
  o.verify_rounds = 0;
  ProgressDisplay quiet(stderr, false);
  FakeMeasurer first;
  tune(tasks, o, first, quiet);
  // Now unroll 16 is ruled out: the re-measurement takes the best two of the others.
  tasks[0].task.valid = [](const codegen::ScheduleConfig& c) { return c.get("unroll") != 16; };
  o.verify_top = 2;
  o.verify_rounds = 1;
  FakeMeasurer again;
  const TuneSummary s = tune(tasks, o, again, quiet);
  EXPECT_EQ(s.resumed, 4);
  EXPECT_EQ(s.verify_trials, 3);
  EXPECT_EQ(std::multiset<std::string>(again.measured.begin(), again.measured.end())
                .count(tasks[0].task.default_config.str()),
            2u);  // the reference, and the re-measurement
  for (const std::string& c : again.measured) EXPECT_EQ(c.find("unroll=16"), std::string::npos);
}

TEST(TunerLoop, BudgetsStopTheRun) {
  TempDir dir;
  const auto g = small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  TuneOptions o = cpu_options(dir);
  o.trials = 0;
  ProgressDisplay quiet(stderr, false);
  FakeMeasurer m;
  EXPECT_THROW(tune(tasks, o, m, quiet), UserError);  // no budget at all
  o.trials = 20;
  o.round_size = 8;
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_EQ(s.trials, 20);
  EXPECT_TRUE(s.budget_spent);
  // The evolutionary search with a time budget only.
  o.trials = 0;
  o.time_budget_s = 0.5;
  o.early_stopping = 0;
  const TuneSummary t = tune(tasks, o, m, quiet);
  EXPECT_LT(t.seconds, 30);
  EXPECT_GT(t.trials, 0);
}

// A time budget ends inside a round of slow candidates (a large batch's kernels: 1-2 s each):
// the candidates not yet started are skipped and not recorded (also those of the round built
// ahead, which is still run), so the run ends about when its budget does (a round alone takes
// 0.8 s here, and the round built ahead another 0.8 s).
TEST(TunerLoop, TimeBudgetEndsARoundOfSlowCandidates) {
  TempDir dir;
  const auto g = small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  TuneOptions o = cpu_options(dir);
  o.time_budget_s = 0.5;
  o.round_size = 8;
  o.verify_rounds = 0;
  o.early_stopping = 0;
  ProgressDisplay quiet(stderr, false);
  FakeMeasurer m;
  m.seconds_each = 0.1;
  const TuneSummary s = tune(tasks, o, m, quiet);
  EXPECT_LT(s.seconds, 1.2);  // without the deadline: two rounds, 1.6 s
  EXPECT_GT(m.skipped, 0);
  EXPECT_GT(s.trials, 0);
  EXPECT_EQ(static_cast<int64_t>(load_records(o.records).records.size()), s.trials);
}

}  // namespace
}  // namespace yoloc::tuner

namespace yoloc::tuner {
namespace {

TEST(TunerIsolate, ResultsCrashesAndHangs) {
  std::string error;
  EXPECT_EQ(run_isolated([] { return std::string("fine"); }, 10, error), "fine");
  EXPECT_FALSE(run_isolated(
      [] {
        std::raise(SIGSEGV);
        return std::string();
      },
      10, error));
  EXPECT_NE(error.find("crashed"), std::string::npos) << error;
  EXPECT_FALSE(run_isolated([]() -> std::string { throw UserError("bad model"); }, 10, error));
  EXPECT_NE(error.find("bad model"), std::string::npos) << error;
  EXPECT_FALSE(run_isolated(
      [] {
        for (;;) pause();
        return std::string();
      },
      0.3, error));
  EXPECT_NE(error.find("timeout"), std::string::npos) << error;
}

}  // namespace
}  // namespace yoloc::tuner
