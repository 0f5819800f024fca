// The tuner's CUDA target without a GPU: the tasks of a graph optimized for cuda (target-neutral
// info plus the CUDA task and its argument sizes), records of a cuda target, the CUDA
// measurer's clear error when it cannot get a device (no driver here; no device 999 anywhere),
// and its check of a candidate's output against the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tuner/records.h"
#include "tuner/report.h"
#include "tuner/search_space.h"
#include "tuner_test_util.h"
#ifdef YOLOC_HAVE_CUDA
#include "codegen/cuda/cuda_compiler.h"
#include "yoloc/half.h"
#include "tuner/cuda/cuda_tuning.h"
#include "tuner/cuda/output_check.h"
#include "targets/cuda/cuda_attributes.h"
#endif

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using testing::TempDir;

TEST(TunerCudaRecords, RoundTripAndSelectionByCudaTarget) {
  TempDir dir;
  const std::string path = dir.path("cuda.jsonl");
  TuneTarget h200{"cuda", "sm_90", "NVIDIA H200", 1};
  Record slow, fast, other_arch;
  slow.key = fast.key = other_arch.key = "tc_conv f16 n1 c64 h80 w80 k64 3x3";
  slow.template_name = fast.template_name = other_arch.template_name = "tc_conv";
  slow.target = fast.target = h200;
  other_arch.target = TuneTarget{"cuda", "sm_80", "NVIDIA A100", 0};
  slow.config = ScheduleConfig({{"bm", 64}, {"bn", 64}});
  fast.config = ScheduleConfig({{"bm", 128}, {"bn", 64}});
  other_arch.config = ScheduleConfig({{"bm", 32}, {"bn", 16}});
  slow.times = {4e-5};
  slow.median = 4e-5;
  fast.times = {2e-5};
  fast.median = 2e-5;
  other_arch.times = {1e-6};
  other_arch.median = 1e-6;
  {
    RecordWriter w(path);
    for (const Record* r : {&slow, &fast, &other_arch}) w.write(*r);
  }
  const RecordSet set = load_records(path);
  ASSERT_EQ(set.records.size(), 3u);
  EXPECT_EQ(set.records[0].target, h200);
  EXPECT_EQ(set.records[0].target.str(), "cuda/sm_90/NVIDIA H200");
  EXPECT_EQ(set.records[1].config, fast.config);
  EXPECT_EQ(set.records[2].target.arch, "sm_80");
  // Another device id of the same model is the same hardware; another arch is not.
  const auto best = best_configs(set.records, RecordQuery{TuneTarget{"cuda", "sm_90", "NVIDIA H200", 0}, 1, 0});
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best.begin()->second, fast.config);
}

#ifdef YOLOC_HAVE_CUDA

/// Conv 3x3 (3 -> 16) of x[1,3,12,12], Conv 3x3 (16 -> 32), Sigmoid, optimized for cuda in fp16.
// Measurement options for the tests whose devices do not exist: the build still runs.
MeasureOptions no_device_options() {
  MeasureOptions o;
  o.timeout_s = 60;
  o.build_jobs = 2;
  return o;
}

// g optimized for the CUDA target in fp16.
std::unique_ptr<Graph> optimized_for_cuda(std::unique_ptr<Graph> g) {
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = Precision::kFp16;
  optimize(*g, ctx);
  return g;
}

std::unique_ptr<Graph> cuda_graph() {
  auto g = std::make_unique<Graph>();
  Value* x = yoloc::testing::input(*g, "x", {1, 3, 12, 12});
  Value* c = yoloc::testing::conv(*g, yoloc::testing::conv(*g, x, 3, 16, 3, 5), 16, 32, 3, 7);
  g->outputs = {yoloc::testing::node(*g, "Sigmoid", {c})};
  return optimized_for_cuda(std::move(g));
}

TEST(TunerCuda, TasksCarryTheirArgumentSizes) {
  const auto g = cuda_graph();
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  ASSERT_FALSE(tasks.empty());
  for (const TuneTask& t : tasks) {
    ASSERT_NE(t.as<CudaTuneTask>(), nullptr) << t.key();
    EXPECT_EQ(t.as<CpuTuneTask>(), nullptr);
    EXPECT_EQ(t.task.key, t.as<CudaTuneTask>()->task.key);
    EXPECT_EQ(t.task.batch, 1);
    EXPECT_TRUE(t.task.valid(t.task.default_config)) << t.key();
    EXPECT_GT(t.bytes, 0u);
    EXPECT_GT(estimated_seconds(t), 0);
    const auto lowered = t.as<CudaTuneTask>()->task.lower(t.task.default_config, "x");
    ASSERT_EQ(lowered.args.size(), t.as<CudaTuneTask>()->arg_elements.size());
    for (size_t i = 0; i < lowered.args.size(); ++i) {
      const auto& a = lowered.args[i];
      if (a.kind != codegen::cuda::CudaArg::Kind::kActivation) {
        EXPECT_EQ(t.as<CudaTuneTask>()->arg_elements[i], 0u);
        continue;
      }
      // Dense values here: the element count of the value.
      EXPECT_EQ(t.as<CudaTuneTask>()->arg_elements[i],
                static_cast<uint64_t>(shape_numel(a.value->type.static_shape())))
          << a.value->name;
    }
    const auto valid = enumerate_valid(t.task);
    ASSERT_TRUE(valid.has_value());
    EXPECT_FALSE(valid->empty());
  }
  for (const TuneTask& t : tasks) {
    const std::string& n = t.task.template_name;
    EXPECT_TRUE(n == "direct_conv" || n == "tc_conv" || n == "simt_conv" || n == "generic") << n;
  }
}

// The tuner times every back-to-back pair beside its two convs (compile fuses it where it was
// faster): the pair is a task marked as an alternative, which the report's sums leave out.
// --fix wg=2: only the tasks whose space has the knob (the tensor-core convs at sm_90, the b2b
// pair among them) and a valid config with it, each searching only configs with that value;
// sampled, mutated and bred configs all have it, the default stays the baseline. --fix wg=1
// leaves the pair out (no valid config: its kernel has no wg=1 form). A knob no task has is an
// error.
TEST(TunerCuda, FixKnobsKeepsTheTasksWithTheKnobAndPinsIt) {
  auto g = std::make_unique<Graph>();
  Value* x = yoloc::testing::input(*g, "x", {1, 3, 32, 32});
  Value* a = yoloc::testing::conv(*g, yoloc::testing::conv(*g, x, 3, 16, 3, 3), 16, 64, 3, 5);
  Value* b = yoloc::testing::conv(*g, a, 64, 64, 3, 9);
  // The 1x1 conv alone reading b: a b2b pair with b's conv.
  Value* c = yoloc::testing::conv(*g, b, 64, 32, 1, 11);
  g->outputs = {yoloc::testing::node(*g, "Sigmoid", {yoloc::testing::conv(*g, c, 32, 8, 3, 13)})};
  const std::vector<TuneTask> all = cuda_tuning_tasks(*optimized_for_cuda(std::move(g)), 90);
  const auto has_wg = [](const TuneTask& t) {
    return std::any_of(t.task.space.knobs.begin(), t.task.space.knobs.end(),
                       [](const codegen::Knob& k) { return k.name == "wg"; });
  };
  const auto with = std::count_if(all.begin(), all.end(), has_wg);
  const auto pairs =
      std::count_if(all.begin(), all.end(), [](const TuneTask& t) { return t.task.alternative; });
  ASSERT_EQ(pairs, 1);
  ASSERT_GE(with, 2);
  ASSERT_LT(with, static_cast<std::ptrdiff_t>(all.size()));  // the image stem and others lack it
  const std::vector<TuneTask> fixed = fix_knobs(all, {{"wg", 2}});
  ASSERT_EQ(static_cast<std::ptrdiff_t>(fixed.size()), with);
  const std::vector<TuneTask> fixed1 = fix_knobs(all, {{"wg", 1}});
  ASSERT_EQ(static_cast<std::ptrdiff_t>(fixed1.size()), with - pairs);
  for (const TuneTask& t : fixed1) EXPECT_FALSE(t.task.alternative) << t.key();
  Rng rng(3);
  for (const TuneTask& t : fixed) {
    ASSERT_TRUE(has_wg(t)) << t.key();
    EXPECT_EQ(t.task.default_config.get("wg"), 0) << t.key();
    int sampled = 0;
    for (int i = 0; i < 20; ++i) {
      const std::optional<ScheduleConfig> c = sample_valid(t.task, rng, 2000);
      if (!c) continue;
      ++sampled;
      EXPECT_EQ(c->get("wg"), 2) << c->str();
      EXPECT_EQ(mutate(t.task.space, *c, rng).get("wg"), 2);
    }
    EXPECT_GT(sampled, 0) << t.key();
    // A config of the whole space (as resumed records and breeding bring) is not this search's.
    EXPECT_FALSE(t.task.valid(t.task.default_config)) << t.task.default_config.str();
  }
  EXPECT_THROW(fix_knobs(all, {{"no_such_knob", 1}}), UserError);
  EXPECT_TRUE(fix_knobs(all, {{"wg", 7}}).empty());
}

// --only REGEX: the tasks whose key it matches, in order; none for a key no task has; a bad
// pattern is an error.
TEST(TunerCuda, OnlyMatchingSelectsTasksByKey) {
  auto g = std::make_unique<Graph>();
  Value* x = yoloc::testing::input(*g, "x", {1, 3, 32, 32});
  Value* a = yoloc::testing::conv(*g, yoloc::testing::conv(*g, x, 3, 16, 3, 3), 16, 64, 3, 5);
  g->outputs = {yoloc::testing::node(*g, "Sigmoid", {yoloc::testing::conv(*g, a, 64, 32, 1, 7)})};
  const std::vector<TuneTask> all = cuda_tuning_tasks(*optimized_for_cuda(std::move(g)), 90);
  std::vector<std::string> threes;
  for (const TuneTask& t : all)
    if (t.key().find(" 3x3 ") != std::string::npos) threes.push_back(t.key());
  ASSERT_GE(threes.size(), 2u);
  ASSERT_LT(threes.size(), all.size());  // the 1x1 conv and sigmoid (a generic kernel) is not one
  std::vector<std::string> got;
  for (const TuneTask& t : only_matching(all, " 3x3 ")) got.push_back(t.key());
  EXPECT_EQ(got, threes);
  EXPECT_EQ(only_matching(all, "^cuda_conv2d_nhwc .* k64 3x3 ").size(), 1u);
  EXPECT_TRUE(only_matching(all, "no such key").empty());
  EXPECT_THROW(only_matching(all, "c(64"), UserError);
}

TEST(TunerCuda, TasksIncludeBackToBackPairsAsAlternatives) {
  auto g = std::make_unique<Graph>();
  Value* x = yoloc::testing::input(*g, "x", {1, 3, 12, 12});
  Value* a = yoloc::testing::conv(*g, yoloc::testing::conv(*g, x, 3, 16, 3, 3), 16, 32, 3, 5);
  Value* b = yoloc::testing::conv(*g, a, 32, 16, 1, 7);  // the 1x1 conv alone reading a
  g->outputs = {yoloc::testing::node(*g, "Sigmoid", {yoloc::testing::conv(*g, b, 16, 8, 3, 9)})};
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*optimized_for_cuda(std::move(g)));
  std::vector<std::string> alternatives, alone;
  for (const TuneTask& t : tasks) (t.task.alternative ? alternatives : alone).push_back(t.key());
  ASSERT_EQ(alternatives.size(), 1u);
  EXPECT_NE(alternatives[0].find(" b2b k2=16 "), std::string::npos) << alternatives[0];
  EXPECT_EQ(alone.size(), 4u);
  for (const std::string& k : alone) EXPECT_EQ(k.find(" b2b "), std::string::npos) << k;

  RecordQuery q;
  q.target.kind = "cuda";
  q.target.arch = "sm_90";
  std::vector<Record> records;
  for (const TuneTask& t : tasks) {
    Record r;
    r.key = t.key();
    r.target = q.target;
    r.config = t.task.default_config;
    r.is_default = true;
    r.median = 1e-5;
    r.times = {1e-5};
    records.push_back(r);
  }
  const TuneReport rep = make_report(tasks, records, q);
  EXPECT_EQ(rep.covered, 4);
  EXPECT_DOUBLE_EQ(rep.default_latency_s, 4e-5);
  EXPECT_NE(report_table(rep).find("1 fused pairs timed too"), std::string::npos);
}

TEST(TunerCuda, MeasurerWithoutDeviceIsAClearError) {
  const auto g = cuda_graph();
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  ASSERT_FALSE(tasks.empty());
  const MeasureOptions o = no_device_options();
  // No device 999 on any machine (and no driver on most build machines): the worker's setup
  // fails, and measure() says so, after building the candidate with NVRTC.
  const auto m = make_cuda_measurer(o, "sm_90", {999});
  const TuneTask& t = tasks.back();
  try {
    m->measure(t, {t.task.default_config}, 0);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA measurement worker on device 999 failed"), std::string::npos)
        << what;
    EXPECT_TRUE(what.find("no CUDA driver") != std::string::npos ||
                what.find("does not exist") != std::string::npos ||
                what.find("CUDA driver call") != std::string::npos)
        << what;
  }
  EXPECT_GT(m->build_seconds(), 0);
  // The target query too.
  try {
    cuda_target(999, "sm_90");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot use CUDA device 999"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_cuda_measurer(o, "compute_90", {0}), UserError);
}

TEST(TunerCuda, SeveralDevicesWithoutDeviceIsAClearError) {
  const auto g = cuda_graph();
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  ASSERT_FALSE(tasks.empty());
  const MeasureOptions o = no_device_options();
  // The reference runs first, on the first device: its failed setup is the error.
  const auto m = make_cuda_measurer(o, "sm_90", {998, 999});
  const TuneTask& t = tasks.back();
  try {
    m->measure(t, {t.task.default_config, t.task.default_config}, 0);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA measurement worker on device 998 failed"),
              std::string::npos)
        << e.what();
  }
  try {
    cuda_target(std::vector<int>{998, 999}, "sm_90");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot use CUDA devices 998,999"), std::string::npos)
        << e.what();
  }
}

TEST(TunerCuda, CudaMeasurerRefusesCpuTasks) {
  const auto g = testing::small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  const auto m = make_cuda_measurer(MeasureOptions{}, "sm_90", {0});
  EXPECT_THROW(m->measure(tasks[0], {tasks[0].task.default_config}, 0), InternalError);
}

TEST(TunerCuda, CompileAppliesConfigsByKey) {
  // What compile --records does with the best records: a task's config marks it tuned.
  const auto g = cuda_graph();
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  const TuneTask& t = tasks.front();
  const auto valid = *enumerate_valid(t.task);
  ScheduleConfig other = valid.front();
  for (const ScheduleConfig& c : valid)
    if (!(c == t.task.default_config)) other = c;
  codegen::cuda::CudaCompileOptions o;
  o.configs[t.key()] = other;
  o.jobs = 2;
  const codegen::cuda::CudaBuild b = codegen::cuda::compile_cuda(*g, o);
  EXPECT_EQ(b.tuned, 1);
  bool found = false;
  for (const auto& l : b.program.launches) {
    if (l.task.value("key", "") != t.key()) continue;
    found = true;
    EXPECT_TRUE(l.task.value("tuned", false));
    EXPECT_EQ(l.task.value("config", ""), other.str());
  }
  EXPECT_TRUE(found);
}

TEST(TunerCuda, CompileAppliesConfigsStoredBeforeKnobs) {
  // A tc_conv config as records stored it before the knobs splitk, l1, epi and halo: it applies as
  // splitk=1, l1=0, epi=0, halo=0.
  // The middle conv of three is a tc_conv task (the first is direct, the last joins the Sigmoid).
  auto built = std::make_unique<Graph>();
  Value* x = yoloc::testing::input(*built, "x", {1, 3, 12, 12});
  Value* c =
      yoloc::testing::conv(*built, yoloc::testing::conv(*built, x, 3, 16, 3, 5), 16, 32, 3, 7);
  built->outputs = {
      yoloc::testing::node(*built, "Sigmoid", {yoloc::testing::conv(*built, c, 32, 16, 3, 9)})};
  const auto g = optimized_for_cuda(std::move(built));
  const std::vector<TuneTask> tasks = cuda_tuning_tasks(*g);
  const auto t = std::find_if(tasks.begin(), tasks.end(),
                              [](const TuneTask& t) { return t.task.template_name == "tc_conv"; });
  ASSERT_NE(t, tasks.end());
  const ScheduleConfig old(
      {{"bk", 32}, {"bm", 32}, {"bn", 32}, {"stages", 3}, {"wm", 16}, {"wn", 32}});
  ScheduleConfig now = old;
  now.set("splitk", 1);
  now.set("l1", 0);
  now.set("epi", 0);
  now.set("halo", 0);
  now.set("wg", 0);
  now.set("minb", 0);
  now.set("pers", 0);
  ASSERT_FALSE(t->task.valid(old));
  ASSERT_TRUE(t->task.valid(now));
  codegen::cuda::CudaCompileOptions o;
  o.configs[t->key()] = old;
  o.jobs = 2;
  const codegen::cuda::CudaBuild b = codegen::cuda::compile_cuda(*g, o);
  EXPECT_EQ(b.tuned, 1);
  bool found = false;
  for (const auto& l : b.program.launches) {
    if (l.task.value("key", "") != t->key()) continue;
    found = true;
    EXPECT_TRUE(l.task.value("tuned", false));
    EXPECT_EQ(l.task.value("config", ""), now.str());
  }
  EXPECT_TRUE(found);
}

// fp16 bytes of `values`.
std::string half_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t b = float_to_half_bits(values[i]);
    std::memcpy(&out[i * 2], &b, 2);
  }
  return out;
}

// The check of a candidate against the default config's output. The case of yolov8n's stem at
// batch 128 (output up to tens, the FMA candidate at 0.483 where the fp16-operand default computes
// 0.499): off by 0.016, more than 1e-2 + 1e-2 * 0.499, and within the range term. A wrong value
// far outside the range term, NaN where the reference has a number, and any difference in fp32
// beyond its own tolerance are still caught.
TEST(TunerCudaOutputCheck, SixteenBitOutputsAllowAShareOfTheReferenceRange) {
  const DType f16 = DType::kFloat16;
  const std::string ref = half_bytes({0.499f, 37.5f, -2.0f, 0.0f});
  const double ref_max = largest_magnitude(ref.data(), f16, 4);
  EXPECT_DOUBLE_EQ(ref_max, 37.5);
  EXPECT_EQ(output_mismatch(ref.data(), ref.data(), 4, f16, 1e-2, 1e-2, ref_max), "");
  const std::string fma = half_bytes({0.483f, 37.5f, -2.0f, 0.0f});
  EXPECT_EQ(output_mismatch(fma.data(), ref.data(), 4, f16, 1e-2, 1e-2, ref_max), "");
  // Without the range term (the check before): rejected.
  EXPECT_NE(output_mismatch(fma.data(), ref.data(), 4, f16, 1e-2, 1e-2, 0.0).find("element 0"),
            std::string::npos);
  // Off by 1 (the injected wrong output) against a range term of 0.375.
  const std::string wrong = half_bytes({0.499f, 37.5f, -1.0f, 0.0f});
  EXPECT_EQ(output_mismatch(wrong.data(), ref.data(), 4, f16, 1e-2, 1e-2, ref_max),
            "element 2 is -1 where the default config computes -2");
  const std::string nan = half_bytes({0.499f, 37.5f, -2.0f, std::nanf("")});
  EXPECT_NE(output_mismatch(nan.data(), ref.data(), 4, f16, 1e-2, 1e-2, ref_max), "");
  EXPECT_EQ(output_mismatch(nan.data(), nan.data(), 4, f16, 1e-2, 1e-2, ref_max), "");
  EXPECT_DOUBLE_EQ(largest_magnitude(nan.data(), f16, 4), 37.5);  // NaN skipped
  // fp32: no range term.
  const std::vector<float> r32 = {0.5f, 100.f}, g32 = {0.501f, 100.f};
  const char* r = reinterpret_cast<const char*>(r32.data());
  const char* g = reinterpret_cast<const char*>(g32.data());
  EXPECT_NE(output_mismatch(g, r, 2, DType::kFloat32, 1e-4, 1e-3, 100.0), "");
  EXPECT_EQ(output_mismatch(g, r, 2, DType::kFloat32, 1e-4, 3e-3, 100.0), "");
  // Other dtypes: equal bytes.
  const std::vector<int32_t> i32 = {1, 2}, j32 = {1, 3};
  EXPECT_EQ(output_mismatch(reinterpret_cast<const char*>(i32.data()),
                            reinterpret_cast<const char*>(i32.data()), 2, DType::kInt32, 0, 0, 0),
            "");
  EXPECT_NE(output_mismatch(reinterpret_cast<const char*>(j32.data()),
                            reinterpret_cast<const char*>(i32.data()), 2, DType::kInt32, 0, 0, 0),
            "");
}

#endif

}  // namespace
}  // namespace yoloc::tuner
