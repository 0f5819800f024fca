// The stem-pair template (a network's first two convs in one kernel, stem_pair_template.h): the
// kernel in the host emulation against the reference executor (first conv in float32, its output
// rounded as the unfused pair stores it, then the second) over YOLOv8's 3x3 and YOLOv5's 6x6
// stems, odd image sizes (tiles past the border), batch 2, fp16 and bf16, an output slice, and
// several configs, with a kernel that skips a tap caught; which groups it takes (yolov8n's first
// two convs, one task whose intermediate is never stored) and which it refuses. (cuda_nvrtc_test
// builds it for sm_80 and sm_90.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "codegen/cuda/tasks.h"
#include "cuda_emulator.h"
#include "frontend/onnx/importer.h"
#include "passes/pipeline.h"
#include "stem_pair_test_util.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::codegen::cuda::testing {
namespace {

const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
const Activation silu = Activation::kSilu, none = Activation::kNone;

// Runs every (task, config) in the emulation; true when all match the reference. `source_edit`
// changes each kernel's source first (to show that a broken kernel fails).
bool run_pairs(const std::vector<std::pair<StemPairTask, ScheduleConfig>>& todo,
               void (*source_edit)(std::string&) = nullptr) {
  std::vector<CudaKernel> kernels;
  for (const auto& [t, cfg] : todo) {
    kernels.push_back(StemPairTemplate::emit(t, cfg, fmt::format("k{}", kernels.size())));
    if (source_edit) source_edit(kernels.back().source);
  }
  const EmulatedKernels emu(kernels);
  bool all = true;
  for (size_t i = 0; i < todo.size(); ++i) {
    const StemPairTask& t = todo[i].first;
    SCOPED_TRACE(t.key() + " | " + todo[i].second.str());
    const StemOperands o = make_stem_operands(t, 70 + static_cast<uint32_t>(i));
    const StemWeights w(t, o);
    std::vector<uint8_t> y(stem_output_bytes(t), 0x5a);
    const std::string err = emu.launch(kernels[i], {{o.x.raw(), o.x.nbytes()},
                                                    {w.w0.raw(), w.w0.nbytes()},
                                                    {o.b0.raw(), o.b0.nbytes()},
                                                    {w.w1.raw(), w.w1.nbytes()},
                                                    {o.b1.raw(), o.b1.nbytes()},
                                                    {y.data(), y.size()}});
    EXPECT_EQ(err, "");
    const ::testing::AssertionResult ok = check_output(t.second, y, o.want, 0x5a);
    if (source_edit == nullptr) {
      EXPECT_TRUE(ok);
    }
    all = all && err.empty() && ok;
  }
  return all;
}

std::vector<std::pair<StemPairTask, ScheduleConfig>> with_configs(
    const std::vector<StemPairTask>& tasks) {
  std::vector<std::pair<StemPairTask, ScheduleConfig>> out;
  for (const StemPairTask& t : tasks) {
    EXPECT_TRUE(StemPairTemplate::matches(t)) << t.key();
    for (const ScheduleConfig& c : stem_configs(t)) out.emplace_back(t, c);
  }
  return out;
}

// YOLOv8's stem (3x3 s2 to 16, 3x3 s2 to 32) on a 37 x 43 image: 19 x 22 intermediate, 10 x 11
// output, tiles past both borders.
StemPairTask v8_stem(int64_t n, DType d) {
  return stem_task(ConvTask::make(n, 3, 37, 43, 16, 3, 2, 1, silu), 32, 3, 2, 1, silu, d, d,
                   {32, 0});
}

TEST(StemPairEmulated, Yolov8AndYolov5StemsFp16) {
  const auto cases = with_configs({
      v8_stem(1, f16),
      // YOLOv5's 6x6 s2 p2 stem, batch 2 (tiles across images), into an output slice.
      stem_task(ConvTask::make(2, 3, 30, 26, 16, 6, 2, 2, silu), 32, 3, 2, 1, silu, f16, f16,
                {48, 8}),
  });
  EXPECT_GE(cases.size(), 8u);
  run_pairs(cases);
}

TEST(StemPairEmulated, Bf16WiderChannelsStrideOneFp32Output) {
  // 4 image channels, 32 intermediate channels without activation, a stride-1 second conv to 24
  // channels (3 n-tiles) stored as fp32.
  run_pairs(with_configs({stem_task(ConvTask::make(1, 4, 21, 18, 32, 3, 2, 1, none), 24, 3, 1, 1,
                                    silu, bf16, DType::kFloat32, {24, 0})}));
}

// The comparison catches a kernel whose first conv skips its last window tap (FMA path) or
// whose A fragments read the wrong tap (MMA path).
TEST(StemPairEmulated, ABrokenKernelFails) {
  const StemPairTask t = v8_stem(1, f16);
  ScheduleConfig fma = StemPairTemplate::default_config(t);
  fma.set("mma", 0);
  EXPECT_FALSE(run_pairs({{t, fma}}, [](std::string& src) {
    const std::string from = "kx < XKW; ++kx)";
    const size_t at = src.find(from);
    ASSERT_NE(at, std::string::npos);
    src.replace(at, from.size(), "kx < XKW - 1; ++kx)");
  }));
  EXPECT_FALSE(run_pairs({{t, StemPairTemplate::default_config(t)}}, [](std::string& src) {
    const std::string from = "koff[ks][e0 + 1]";
    const size_t at = src.find(from);
    ASSERT_NE(at, std::string::npos);
    src.replace(at, from.size(), "koff[ks][e0]");
  }));
}

TEST(StemPairRules, WhatItTakesAndKeys) {
  const StemPairTask t = v8_stem(1, f16);
  EXPECT_EQ(t.key(), "cuda_stem_pair " + t.first.key() + " then " + t.second.key());
  EXPECT_TRUE(StemPairTemplate::valid(t, StemPairTemplate::default_config(t)));
  const auto refused = [&t](auto edit) {
    StemPairTask u = t;
    edit(u);
    return !StemPairTemplate::matches(u);
  };
  EXPECT_TRUE(refused([](StemPairTask& u) { u.first.in_nchw = false; }));
  EXPECT_TRUE(refused([](StemPairTask& u) {  // fp32 tasks stay unfused (no fp32 tensor cores)
    u.first.out_dtype = u.second.dtype = DType::kFloat32;
  }));
  EXPECT_TRUE(refused([](StemPairTask& u) { u.second.conv.residual = true; }));
  EXPECT_TRUE(refused([](StemPairTask& u) { u.second.in = {48, 16}; }));  // reads a slice
  EXPECT_TRUE(refused([](StemPairTask& u) { u.second.out_nchw = true; }));
  EXPECT_TRUE(refused([](StemPairTask& u) {  // the second must read exactly the first's output
    u.second.conv = ConvTask::make(1, 16, 20, 22, 32, 3, 2, 1, silu);
  }));
  // 24 intermediate channels are not whole 16-deep steps; a 5x5 second window is too wide.
  EXPECT_FALSE(StemPairTemplate::matches(stem_task(ConvTask::make(1, 3, 37, 43, 24, 3, 2, 1, silu),
                                                   32, 3, 2, 1, silu, f16, f16, {32, 0})));
  EXPECT_FALSE(StemPairTemplate::matches(stem_task(ConvTask::make(1, 3, 37, 43, 16, 3, 2, 1, silu),
                                                   32, 5, 2, 2, silu, f16, f16, {32, 0})));
  // A tile that is not whole m-tiles per warp, and 128 output channels in 2 m-tiles per warp
  // (128 accumulators), are invalid.
  EXPECT_FALSE(StemPairTemplate::valid(
      t, ScheduleConfig({{"th", 1}, {"tw", 16}, {"warps", 2}, {"pp", 1}, {"mma", 1}})));
  const StemPairTask wide = stem_task(ConvTask::make(1, 3, 37, 43, 16, 3, 2, 1, silu), 128, 3, 2, 1,
                                      silu, f16, f16, {128, 0});
  EXPECT_TRUE(StemPairTemplate::matches(wide));
  EXPECT_FALSE(StemPairTemplate::valid(
      wide, ScheduleConfig({{"th", 4}, {"tw", 16}, {"warps", 2}, {"pp", 1}, {"mma", 1}})));
  EXPECT_TRUE(StemPairTemplate::valid(wide, StemPairTemplate::default_config(wide)));
}

// yolov8n for cuda, fp16, with stem pairs: its first two convs are one stem-pair task whose
// intermediate the memory plan never stores; by default they are two tasks.
TEST(StemPairTask, Yolov8nFirstTwoConvs) {
  const char* env = std::getenv("YOLOC_SHARED_DIR");
  const auto path = std::filesystem::path(env ? env : YOLOC_SHARED_DIR) / "models" / "yolov8n.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  auto g = onnx_frontend::import_onnx(path.string(), {});
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = Precision::kFp16;
  optimize(*g, ctx);
  const std::vector<CudaTask> tasks = extract_cuda_tasks(*g, 90, {}, true);
  const std::vector<CudaTask> unfused = extract_cuda_tasks(*g, 90);
  ASSERT_FALSE(tasks.empty());
  EXPECT_EQ(tasks.size() + 1, unfused.size());
  EXPECT_EQ(tasks[0].template_name, "stem_pair");
  EXPECT_EQ(tasks[0].key,
            "cuda_stem_pair cuda_conv2d_nhwc f16->f16 n1 c3 h640 w640 k16 3x3 s2x2 p1x1 d1x1 silu "
            "in3+0 out16+0 in-nchw-f32 then cuda_conv2d_nhwc f16->f16 n1 c16 h320 w320 k32 3x3 "
            "s2x2 p1x1 d1x1 silu in16+0 out32+0");
  EXPECT_EQ(tasks[0].group, unfused[0].group);
  EXPECT_EQ(tasks[0].second_group, unfused[1].group);
  EXPECT_EQ(unfused[0].template_name, "direct_conv");
  for (size_t i = 1; i < tasks.size(); ++i) {
    EXPECT_NE(tasks[i].template_name, "stem_pair");
    EXPECT_EQ(tasks[i].key, unfused[i + 1].key);
  }
  const std::vector<MergedGroups> merged = merged_groups(tasks);
  ASSERT_FALSE(merged.empty());
  EXPECT_EQ(merged[0].groups, (std::vector<int>{tasks[0].group, tasks[0].second_group}));
  EXPECT_TRUE(merged[0].internal);
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
