// Tuner search: every config a strategy proposes is valid, new and distinct; grid covers the
// valid space exactly; mutation and crossover stay in the space; the task scheduler's order.
#include <gtest/gtest.h>

#include <set>

#include "tuner/search_strategy.h"
#include "tuner/task_scheduler.h"
#include "tuner_test_util.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;

class TunerSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = testing::small_tuning_graph();
    tasks_ = tuning_tasks(*graph_);
    for (const TuneTask& t : tasks_)
      if (t.key().find(" c16 h12 w12 k32 3x3 ") != std::string::npos) conv_ = &t;
    ASSERT_TRUE(conv_) << "no 3x3 conv 16 -> 32 task";
  }
  const TuneTask* conv_ = nullptr;  // the 3x3 conv, 16 -> 32 channels
  std::unique_ptr<Graph> graph_;
  std::vector<TuneTask> tasks_;
};

TEST_F(TunerSearch, TasksOfTheSmallGraph) {
  // Three distinct convs (3x3 3->16 and 16->32; 1x1 32->16, twice), the Sigmoid-Mul-Tanh chain
  // and the kernel of the two output Sigmoids.
  ASSERT_EQ(tasks_.size(), 5u);
  std::multiset<std::string> names;
  int groups = 0;
  for (const TuneTask& t : tasks_) {
    names.insert(t.task.template_name);
    groups += t.occurrences();
    EXPECT_EQ(t.occurrences(), t.key().find(" 1x1 ") != std::string::npos ? 2 : 1) << t.key();
    EXPECT_GT(t.bytes, 0u);
    EXPECT_TRUE(t.task.valid(t.task.default_config)) << t.key();
  }
  EXPECT_EQ(groups, 6);
  EXPECT_EQ(names, (std::multiset<std::string>{"conv", "conv", "conv", "elementwise", "tail"}));
  // 3x3 conv: 2 * K * OH * OW * C * 9 by hand.
  EXPECT_DOUBLE_EQ(conv_->task.flops, 2.0 * 32 * 12 * 12 * 16 * 9);
}

TEST_F(TunerSearch, EnumerationMatchesTheConvRule) {
  const TuneTask& t = *conv_;  // 3x3, K = 32 (2 blocks), OW = 12
  const auto all = enumerate_valid(t.task);
  ASSERT_TRUE(all);
  // The conv template's documented rule, counted here independently: ocb divides K/16, the
  // register tile (ocb*owb + ocb 16-float vectors, plus one) fits the ISA's vector registers,
  // owb <= OW. The tasks are for this machine's ISA: AVX-512 has 32 registers of 16 floats,
  // AVX2 16 of 8, NEON 32 of 4, the generic ISA 16 of 4.
  const codegen::cpu::CpuIsa isa = codegen::cpu::detect_host_isa();
  const int64_t registers = isa == codegen::cpu::CpuIsa::kAvx512 ? 32
                            : isa == codegen::cpu::CpuIsa::kAvx2  ? 16
                            : isa == codegen::cpu::CpuIsa::kNeon  ? 32
                                                                  : 16;
  const int64_t per_vector = isa == codegen::cpu::CpuIsa::kAvx512 ? 1
                             : isa == codegen::cpu::CpuIsa::kAvx2 ? 2
                                                                  : 4;
  int64_t expect = 0;
  for (int64_t i = 0; i < t.task.space.size(); ++i) {
    const ScheduleConfig c = ScheduleConfig::at(t.task.space, i);
    const int64_t ocb = c.get("ocb"), owb = c.get("owb");
    expect += 2 % ocb == 0 && (ocb * owb + ocb) * per_vector + 1 <= registers && owb <= 12;
  }
  EXPECT_EQ(static_cast<int64_t>(all->size()), expect);
  EXPECT_GT(expect, 10);
  std::set<std::string> seen;
  for (const ScheduleConfig& c : *all) {
    EXPECT_TRUE(c.in_space(t.task.space));
    EXPECT_TRUE(seen.insert(c.str()).second);
  }
}

TEST_F(TunerSearch, SamplesMutationsAndCrossoversStayInTheSpace) {
  const TuneTask& t = *conv_;
  Rng rng(7);
  for (int i = 0; i < 200; ++i) {
    const auto a = sample_valid(t.task, rng);
    const auto b = sample_valid(t.task, rng);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(t.task.valid(*a));
    const ScheduleConfig m = mutate(t.task.space, *a, rng);
    EXPECT_TRUE(m.in_space(t.task.space)) << m.str();
    int changed = 0;
    for (const auto& [k, v] : a->values()) changed += m.get(k) != v;
    EXPECT_EQ(changed, 1) << a->str() << " -> " << m.str();
    const ScheduleConfig x = crossover(t.task.space, *a, *b, rng);
    EXPECT_TRUE(x.in_space(t.task.space));
    for (const auto& [k, v] : x.values()) EXPECT_TRUE(v == a->get(k) || v == b->get(k));
  }
}

/// Proposes rounds of `n` until the strategy runs dry; every config must be valid and new.
size_t exhaust(SearchStrategy& s, const TuneTask& t, int n, CostModel* model) {
  SearchState st;
  st.task = &t;
  for (int round = 0; round < 1000; ++round) {
    const std::vector<ScheduleConfig> got = s.propose(st, n);
    EXPECT_LE(static_cast<int>(got.size()), n);
    if (got.empty()) break;
    for (const ScheduleConfig& c : got) {
      EXPECT_TRUE(t.task.valid(c)) << c.str();
      EXPECT_TRUE(st.tried.insert(c.str()).second) << "proposed twice: " << c.str();
      // A made-up time so the model has something to learn.
      const double secs = 1e-3 * static_cast<double>(1 + (c.str().size() % 7));
      st.measured.emplace_back(c, secs);
      if (model) model->add(t, c, secs);
    }
    if (model) model->train();
  }
  return st.tried.size();
}

TEST_F(TunerSearch, EveryStrategyProposesEachValidConfigOnce) {
  for (const TuneTask& t : tasks_) {
    const size_t valid = enumerate_valid(t.task)->size();
    for (const char* name : kStrategies) {
      CostModel model;
      auto s = make_strategy(name, &model, 3);
      EXPECT_EQ(exhaust(*s, t, 8, std::string(name) == "evolutionary" ? &model : nullptr), valid)
          << name << " on " << t.key();
    }
  }
}

TEST_F(TunerSearch, EvolutionBreedsValidConfigs) {
  // Breeding instead of ranking the whole space (what larger spaces get).
  const TuneTask& t = *conv_;
  CostModel model;
  auto s = make_strategy("evolutionary", &model, 5, 0);
  EXPECT_EQ(exhaust(*s, t, 8, &model), enumerate_valid(t.task)->size());
}

// Each round of four or more holds an untried step from the best measured config along one
// knob, whatever the model ranks: the values a resumed tune's records never measured (a knob
// added since) get measured next to the best config.
TEST_F(TunerSearch, EvolutionStepsFromTheBestAlongOneKnob) {
  const TuneTask& t = *conv_;
  const auto all = *enumerate_valid(t.task);
  CostModel model;
  SearchState st;
  st.task = &t;
  // The first config measured fastest; its one-knob steps and every other config of the rest
  // untried.
  const ScheduleConfig& best = all.front();
  const auto one_step = [&](const ScheduleConfig& c) {
    int changed = 0;
    for (const auto& [k, v] : best.values()) changed += c.get(k) != v;
    return changed == 1;
  };
  size_t steps = 0, others = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const ScheduleConfig& c = all[i];
    if (one_step(c)) {
      ++steps;
    } else if (i % 2 == 1) {
      ++others;
    } else {
      const double secs = i == 0 ? 1e-4 : 1e-3;
      st.measured.emplace_back(c, secs);
      st.tried.insert(c.str());
      model.add(t, c, secs);
    }
  }
  model.train();
  ASSERT_GT(steps, 2u);
  ASSERT_GT(others, 2 * steps);
  auto s = make_strategy("evolutionary", &model, 9, 0);
  for (int round = 0; steps > 0; ++round) {
    const std::vector<ScheduleConfig> got = s->propose(st, 4);
    ASSERT_FALSE(got.empty());
    size_t stepping = 0;
    for (const ScheduleConfig& c : got) {
      stepping += one_step(c);
      st.tried.insert(c.str());
    }
    EXPECT_GE(stepping, 1u) << "round " << round;
    steps -= stepping;
  }
}

TEST_F(TunerSearch, GridGoesInIndexOrder) {
  const TuneTask& t = *testing::task_of(tasks_, "elementwise");
  auto s = make_strategy("grid", nullptr, 1);
  SearchState st;
  st.task = &t;
  const auto all = *enumerate_valid(t.task);
  const auto got = s->propose(st, 3);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], all[i]);
  EXPECT_THROW(make_strategy("annealing", nullptr, 1), UserError);
}

TEST(TunerScheduler, HeaviestFirstThenWhereTheGainIs) {
  // Task 0 runs 3 times per model at ~1 ms, task 1 once at ~2 ms, task 2 once at ~0.1 ms.
  TaskScheduler s({3, 1, 1}, {1e-3, 2e-3, 1e-4});
  EXPECT_EQ(s.next(), 0);
  s.update(0, 8, 1e-3);
  EXPECT_EQ(s.next(), 1);
  s.update(1, 8, 2e-3);
  EXPECT_EQ(s.next(), 2);
  s.update(2, 8, 1e-4);
  EXPECT_NEAR(s.latency(), 3e-3 + 2e-3 + 1e-4, 1e-12);
  // Task 1 improves by half: it is where trials pay now, though task 0 weighs more.
  s.update(1, 8, 1e-3);
  EXPECT_EQ(s.next(), 1);
  // Without gains the heavier task gets the trials.
  s.update(1, 8, 1e-3);
  s.update(1, 8, 1e-3);
  s.update(1, 8, 1e-3);
  EXPECT_EQ(s.next(), 0);
}

TEST(TunerScheduler, EarlyStoppingAndFinish) {
  TaskScheduler::Options o;
  o.early_stopping = 16;
  TaskScheduler s({1, 1}, {1e-3, 1e-3}, o);
  s.update(0, 8, 1e-3);
  s.update(0, 8, 0.999e-3);  // under min_gain: no improvement
  EXPECT_FALSE(s.done(0));
  s.update(0, 8, 0.999e-3);
  EXPECT_TRUE(s.done(0));
  EXPECT_EQ(s.next(), 1);
  s.finish(1);
  EXPECT_EQ(s.next(), -1);
}

TEST(TunerScheduler, ARoundUnderWayIsNotGivenTwiceInTheFirstPass) {
  // Task 0 weighs most: its first round begins; the next round goes to task 1, then (every
  // task's first round under way) to one of them again, not to none.
  TaskScheduler s({3, 1}, {1e-3, 1e-3});
  EXPECT_EQ(s.next(), 0);
  s.begin(0);
  EXPECT_EQ(s.next(), 1);
  s.begin(1);
  EXPECT_EQ(s.next(), 0);  // 3 ms of the 4 ms latency: the larger share of the exploration
  s.update(0, 8, 1e-3);
  s.drop(1);  // task 1's round dropped: it is still owed its first round
  EXPECT_EQ(s.next(), 1);
  s.finish(0);
  s.finish(1);
  EXPECT_EQ(s.next(), -1);
}

TEST(TunerScheduler, EstimatesAreCalibratedByMeasuredTasks) {
  TaskScheduler s({1, 1}, {1e-3, 4e-3});
  s.update(0, 8, 2e-3);
  s.calibrate(0, 2e-3);  // twice the estimate
  EXPECT_DOUBLE_EQ(s.estimate(1), 8e-3);
  EXPECT_DOUBLE_EQ(s.latency(), 2e-3 + 8e-3);
}

}  // namespace
}  // namespace yoloc::tuner
