// GPU test of the CUDA measurer (label gpu; skips without a CUDA device): yolov8n's SPPF at 20x20
// (generic tasks), each task's default and other configs measured by the persistent worker, with
// injected faults: a crash and a hang cost their own result (the worker restarts, and only then),
// a wrong output is caught by the check against the default config; with two devices (when there
// are), the same spread over one worker per device, which are reused from batch to batch and
// finish a batch sooner than one device does. This file is linked first into its binary:
// the measurer forks, so this process must not have initialised CUDA (the other GPU tests do);
// run alone with --gtest_filter='CudaTuneGpu.*' when in doubt.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "generic_test_util.h"
#include "tuner/cuda/cuda_tuning.h"
#include "tuner/search_space.h"

namespace yoloc::tuner {
namespace {

/// A batch of a generic task: its default config, then the configs of its default items with
/// 64, 128, 512 and 256 threads (kFaults below crashes, hangs and corrupts the first three).
std::vector<codegen::ScheduleConfig> fault_batch(const TuneTask& t) {
  const auto all = *enumerate_valid(t.task);
  std::vector<codegen::ScheduleConfig> configs = {t.task.default_config};
  const auto items = t.task.default_config.get("items");
  for (int64_t threads : {64, 128, 512, 256}) {
    for (const auto& c : all)
      if (c.get("threads") == threads && c.get("items") == items && !(c == configs[0]))
        configs.push_back(c);
  }
  return configs;
}

constexpr const char* kFaults =
    "crash@generic:threads=64;hang@generic:threads=128;wrong@generic:threads=512";

MeasureOptions fault_options() {
  MeasureOptions o;
  o.timeout_s = 5;
  o.repeats = 3;
  o.build_jobs = 8;
  o.inject = kFaults;
  return o;
}

/// Each result as fault_batch's config says: a crash, a timeout, a wrong output or a time.
void expect_faults(const TuneTask& t, const std::vector<codegen::ScheduleConfig>& configs,
                   const std::vector<MeasureResult>& r) {
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
}

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
  const auto m = make_cuda_measurer(fault_options(), target.arch, {0});
  int checked = 0, faults = 0;
  for (const TuneTask& t : tasks) {
    if (t.task.template_name != "generic") continue;
    const std::vector<codegen::ScheduleConfig> configs = fault_batch(t);
    const std::vector<MeasureResult> r = m->measure(t, configs, 0);
    expect_faults(t, configs, r);
    if (HasFatalFailure()) return;
    for (const auto& c : configs) faults += c.get("threads") == 64 || c.get("threads") == 128;
    // A second batch of the task: checked against the reference kept from the first.
    const std::vector<MeasureResult> again = m->measure(t, {t.task.default_config}, r[0].median);
    EXPECT_TRUE(again[0].ok()) << again[0].error;
    if (++checked == 2) break;
  }
  EXPECT_GT(checked, 0) << "no generic task";
  // One worker for every batch of every task, and one more after each crash and each hang.
  EXPECT_EQ(m->worker_starts(), 1 + faults);
}

// Two devices measure a batch in parallel: one result per config, in its place, with the checks
// and faults of one device (a crash on one device's worker is a crash, not a timeout: the other
// device's worker holds no end of its socket). The device count is asked through cuda_target (a
// child process): this process must not initialise CUDA.
TEST(CudaTuneGpu, SeveralDevicesMeasureInParallel) {
  TuneTarget target;
  try {
    target = cuda_target(std::vector<int>{0, 1}, "");
  } catch (const UserError& e) {
    GTEST_SKIP() << "needs two CUDA devices of one kind: " << e.what();
  }
  EXPECT_EQ(target.device_id, 0);
  namespace ct = codegen::cuda::testing;
  const auto g = ct::optimized(ct::sppf_graph(1, 128, 20, 20));
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  const auto two = make_cuda_measurer(fault_options(), target.arch, {0, 1});
  const auto one = make_cuda_measurer(fault_options(), target.arch, {1});
  int checked = 0;
  for (const TuneTask& t : tasks) {
    if (t.task.template_name != "generic") continue;
    // The faults and the default's 256 threads with the other items: more than one worker's
    // share of good configs.
    std::vector<codegen::ScheduleConfig> configs = fault_batch(t);
    const auto all = *enumerate_valid(t.task);
    for (const auto& c : all)
      if (c.get("threads") == 256 && !(c == configs[0])) configs.push_back(c);
    ASSERT_GE(configs.size(), 6u) << t.key();
    const std::vector<MeasureResult> r = two->measure(t, configs, 0);
    expect_faults(t, configs, r);
    if (HasFatalFailure()) return;
    // The same batch on one device (the second: its reference is its own) fails the same ones.
    const std::vector<MeasureResult> alone = one->measure(t, configs, 0);
    ASSERT_EQ(alone.size(), r.size());
    for (size_t i = 0; i < r.size(); ++i)
      EXPECT_EQ(alone[i].ok(), r[i].ok())
          << configs[i].str() << ": " << alone[i].error << " / " << r[i].error;
    EXPECT_GE(two->worker_starts(), 2) << "both devices measured";
    std::vector<codegen::ScheduleConfig> good;
    for (size_t i = 0; i < configs.size(); ++i)
      if (r[i].ok()) good.push_back(configs[i]);
    // Clean batches: the first restarts a worker its device lost at a fault, if any; then the
    // same workers serve every batch, and two devices finish one sooner than one device.
    two->measure(t, good, r[0].median);
    one->measure(t, good, r[0].median);
    const int two_starts = two->worker_starts(), one_starts = one->worker_starts();
    double two_s = 0, one_s = 0;
    for (int k = 0; k < 3; ++k) {
      double before = two->run_seconds();
      for (const MeasureResult& m : two->measure(t, good, r[0].median))
        EXPECT_TRUE(m.ok()) << m.error;
      two_s += two->run_seconds() - before;
      before = one->run_seconds();
      for (const MeasureResult& m : one->measure(t, good, r[0].median))
        EXPECT_TRUE(m.ok()) << m.error;
      one_s += one->run_seconds() - before;
    }
    EXPECT_EQ(two->worker_starts(), two_starts) << "the workers of both devices are reused";
    EXPECT_EQ(one->worker_starts(), one_starts);
    fmt::print("{} good configs, 3 batches: two devices {:.3f} s, one device {:.3f} s\n",
               good.size(), two_s, one_s);
    EXPECT_LT(two_s, one_s) << "two devices should finish a batch sooner than one";
    // A later batch with a crash: each worker checks against its own reference.
    for (const auto& c : configs)
      if (c.get("threads") == 64) good.push_back(c);  // a crash among them, on some device
    const std::vector<MeasureResult> again = two->measure(t, good, r[0].median);
    ASSERT_EQ(again.size(), good.size());
    for (size_t i = 0; i + 1 < good.size(); ++i)
      EXPECT_TRUE(again[i].ok()) << good[i].str() << ": " << again[i].error;
    EXPECT_FALSE(again.back().ok());
    if (++checked == 2) break;
  }
  EXPECT_GT(checked, 0) << "no generic task";
}

}  // namespace
}  // namespace yoloc::tuner
