// The tuner's cost model: trained on measurements of some configs, it must rank held-out
// configs of the same tasks far better than chance. The "measurements" come from a synthetic
// timing law (register tile reuse, column remainder waste, cache tile size, unroll), with noise.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>

#include "tuner/cost_model.h"
#include "tuner/search_space.h"
#include "tuner_test_util.h"
#include "targets/cpu/cpu_attributes.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using namespace yoloc::testing;

/// Convs of several shapes: 3 -> 16 -> 32 (3x3), -> 64 (1x1), -> 48 (3x3), -> 16 (1x1), then a
/// Sigmoid for the output.
std::unique_ptr<Graph> conv_chain() {
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {1, 3, 20, 20});
  Value* a = conv(*g, x, 3, 16, 3, 9);
  a = conv(*g, a, 16, 32, 3, 1);
  a = conv(*g, a, 32, 64, 1, 3);
  a = conv(*g, a, 64, 48, 3, 5);
  g->outputs = {node(*g, "Sigmoid", {conv(*g, a, 48, 16, 1, 7)})};
  PassContext ctx;
  ctx.target = yoloc::targets::cpu_attributes();
  optimize(*g, ctx);
  return g;
}

/// The conv tasks of the chain, with their input channels and kernel size read from the key.
struct ConvCase {
  const TuneTask* task;
  int64_t in_c, kernel;
};
std::vector<ConvCase> conv_cases(const std::vector<TuneTask>& tasks) {
  std::vector<ConvCase> out;
  for (const TuneTask& t : tasks) {
    if (t.task.template_name != "conv") continue;
    std::smatch m;
    const std::string& key = t.key();
    EXPECT_TRUE(std::regex_search(key, m, std::regex(R"( c(\d+) .* (\d)x\d )"))) << key;
    out.push_back({&t, std::stoll(m[1]), std::stoll(m[2])});
  }
  return out;
}

/// The synthetic law: seconds of `c` on a conv task with output width 20 and `in_c` inputs.
double synthetic_seconds(const TuneTask& t, const ScheduleConfig& c, int64_t in_c, int64_t kernel,
                         Rng& rng) {
  const double ocb = static_cast<double>(c.get("ocb")), owb = static_cast<double>(c.get("owb"));
  const double ow = 20;
  const double reuse = ocb * owb / (ocb + owb + 1);
  const double waste = ow / (std::ceil(ow / owb) * owb);
  const double slice = static_cast<double>(kernel * kernel * std::min<int64_t>(in_c, 16)) * ocb *
                       16 * 4 * static_cast<double>(c.get("ict"));
  const double cache = slice > 32768 ? 1.3 : 1.0;
  const int64_t u = c.get("unroll");
  const double unroll = u == 1 ? 1.15 : u == 16 ? 1.1 : 1.0;
  const double order = c.get("order") ? 1.05 : 1.0;
  std::normal_distribution<double> noise(1.0, 0.02);
  return t.task.flops / (10e9 * reuse * waste) * cache * unroll * order * noise(rng);
}

TEST(TunerCostModel, RanksHeldOutConfigsFarBetterThanChance) {
  const auto g = conv_chain();
  const std::vector<TuneTask> all = tuning_tasks(*g);
  const std::vector<ConvCase> cases = conv_cases(all);
  ASSERT_GE(cases.size(), 4u);  // the last conv may be fused into the output kernel
  Rng rng(11);
  CostModel model;
  // Per task: held-out configs with their true seconds.
  std::vector<std::vector<std::pair<ScheduleConfig, double>>> held(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const TuneTask& t = *cases[i].task;
    std::vector<ScheduleConfig> configs = *enumerate_valid(t.task);
    std::shuffle(configs.begin(), configs.end(), rng);
    configs.resize(std::min<size_t>(configs.size(), 100));
    for (size_t k = 0; k < configs.size(); ++k) {
      const double s = synthetic_seconds(t, configs[k], cases[i].in_c, cases[i].kernel, rng);
      if (k < configs.size() * 6 / 10) {
        model.add(t, configs[k], s);
      } else {
        held[i].emplace_back(configs[k], s);
      }
    }
  }
  EXPECT_FALSE(model.trained());
  model.train();
  ASSERT_TRUE(model.trained());

  // Pairwise ranking accuracy on held-out pairs of the same task (ties within 3 % left out).
  int64_t right = 0, pairs = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<ScheduleConfig> cfgs;
    for (const auto& [c, s] : held[i]) cfgs.push_back(c);
    const std::vector<float> score = model.predict(*cases[i].task, cfgs);
    ASSERT_EQ(score.size(), cfgs.size());
    for (size_t a = 0; a < cfgs.size(); ++a) {
      for (size_t b = a + 1; b < cfgs.size(); ++b) {
        const double ta = held[i][a].second, tb = held[i][b].second;
        if (std::fabs(ta - tb) < 0.03 * std::min(ta, tb)) continue;
        ++pairs;
        right += (ta < tb) == (score[a] > score[b]);
      }
    }
  }
  ASSERT_GT(pairs, 500);
  const double accuracy = static_cast<double>(right) / static_cast<double>(pairs);
  EXPECT_GT(accuracy, 0.8) << "pairwise accuracy " << accuracy << " over " << pairs << " pairs";
}

TEST(TunerCostModel, FailedCandidatesRankLast) {
  const auto g = conv_chain();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  const TuneTask& t = *conv_cases(tasks).at(1).task;
  std::vector<ScheduleConfig> all = *enumerate_valid(t.task);
  CostModel model;
  // Every config with owb 1 fails; the others all take the same time.
  for (const ScheduleConfig& c : all) model.add(t, c, c.get("owb") == 1 ? -1 : 1e-3);
  model.train();
  const std::vector<float> score = model.predict(t, all);
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].get("owb") == 1) {
      EXPECT_LT(score[i], 0.5f) << all[i].str();
    } else {
      EXPECT_GT(score[i], 0.5f) << all[i].str();
    }
  }
}

TEST(TunerCostModel, FeaturesHaveOneLayout) {
  const auto g = conv_chain();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  const std::vector<std::string> knobs = {"ict", "ocb", "order", "owb", "unroll", "separable"};
  const FeatureColumns columns{{"conv", "elementwise", "pool"}, knobs};
  const TuneTask& conv = *conv_cases(tasks).at(1).task;
  const size_t n = cost_features(conv, conv.task.default_config, columns).size();
  for (const TuneTask& t : tasks)
    EXPECT_EQ(cost_features(t, t.task.default_config, columns).size(), n);
  // The template columns: 1 for the task's own template, 0 for the others.
  const ScheduleConfig c = conv.task.default_config;
  const std::vector<float> f = cost_features(conv, c, columns);
  EXPECT_EQ((std::vector<float>(f.begin(), f.begin() + 3)), (std::vector<float>{1.f, 0.f, 0.f}));
  // The knob columns: the task's knob values in `knobs` order, NaN for a knob it lacks.
  const size_t first_knob = n - knobs.size() - 7;  // 7 derived features follow the knobs
  for (size_t k = 0; k + 1 < knobs.size(); ++k)
    EXPECT_EQ(f[first_knob + k], static_cast<float>(c.get(knobs[k])));
  EXPECT_TRUE(std::isnan(f[first_knob + knobs.size() - 1]));
}

}  // namespace
}  // namespace yoloc::tuner
