// GPU test of the CUDA measurer (label gpu; skips without a CUDA device): yolov8n's SPPF at 20x20
// (generic tasks), each task's default and other configs measured in the forked worker, with
// injected faults: a crash and a hang cost their own result (the worker restarts), a wrong output
// is caught by the check against the default config. This file is linked first into its binary:
// the measurer forks, so this process must not have initialised CUDA (the other GPU tests do);
// run alone with --gtest_filter='CudaTuneGpu.*' when in doubt.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "generic_test_util.h"
#include "tuner/cuda/cuda_tuning.h"
#include "tuner/search_space.h"

namespace yoloc::tuner {
namespace {

TEST(CudaTuneGpu, MeasuresChecksAndSurvivesFaults) {
  TuneTarget target;
  try {
    target = cuda_target(0, "");
  } catch (const UserError& e) {
    GTEST_SKIP() << e.what();
  }
  namespace ct = codegen::cuda::testing;
  const auto g = ct::optimized(ct::sppf_graph(1, 128, 20, 20));
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  ASSERT_FALSE(tasks.empty());
  MeasureOptions o;
  o.timeout_s = 5;
  o.repeats = 3;
  o.build_jobs = 8;
  o.inject = "crash@generic:threads=64;hang@generic:threads=128;wrong@generic:threads=512";
  const auto m = make_cuda_measurer(o, target.arch, 0);
  int checked = 0;
  for (const TuneTask& t : tasks) {
    if (t.task.template_name != "generic") continue;
    const auto all = *enumerate_valid(t.task);
    std::vector<codegen::ScheduleConfig> configs = {t.task.default_config};
    const auto items = t.task.default_config.get("items");
    for (int64_t threads : {64, 128, 512, 256}) {
      for (const auto& c : all)
        if (c.get("threads") == threads && c.get("items") == items && !(c == configs[0]))
          configs.push_back(c);
    }
    const std::vector<MeasureResult> r = m->measure(t, configs, 0);
    ASSERT_EQ(r.size(), configs.size());
    ASSERT_TRUE(r[0].ok()) << t.key() << ": " << r[0].error;
    for (size_t i = 0; i < r.size(); ++i) {
      const int64_t threads = configs[i].get("threads");
      SCOPED_TRACE(fmt::format("{} [{}]", t.key(), configs[i].str()));
      fmt::print("{:<60.60} {:<20} {}\n", t.key(), configs[i].str(),
                 r[i].ok() ? fmt::format("{:.2f} us", r[i].median * 1e6) : r[i].error);
      if (threads == 64) {
        EXPECT_NE(r[i].error.find("crashed"), std::string::npos) << r[i].error;
      } else if (threads == 128) {
        EXPECT_NE(r[i].error.find("timeout"), std::string::npos) << r[i].error;
      } else if (threads == 512) {
        EXPECT_NE(r[i].error.find("wrong output"), std::string::npos) << r[i].error;
      } else {
        EXPECT_TRUE(r[i].ok()) << r[i].error;
        EXPECT_GT(r[i].median, 0);
        EXPECT_LT(r[i].median, 0.1);
        EXPECT_EQ(r[i].times.size(), 3u);
      }
    }
    // A second batch of the task: checked against the reference kept from the first.
    const std::vector<MeasureResult> again = m->measure(t, {t.task.default_config}, r[0].median);
    EXPECT_TRUE(again[0].ok()) << again[0].error;
    if (++checked == 2) break;
  }
  EXPECT_GT(checked, 0) << "no generic task";
}

}  // namespace
}  // namespace yoloc::tuner
