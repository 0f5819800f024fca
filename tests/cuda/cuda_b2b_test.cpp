// Back-to-back conv pairs of the tensor-core template (CudaConvTask::b2b: a conv, then the 1x1
// conv of its output, in one kernel): in the host emulation (cuda_emulator.h) against the
// reference executor running the two convs with the intermediate rounded as stored, over 3x3
// stride-1 and stride-2 first stages, channel counts that are not multiples of the tiles (the
// intermediate zero-padded to 16, several column tiles in the second stage), SiLU and none,
// outputs into NHWC and NCHW concat slices, batch 2 and several configs (halo tiles among them);
// their validity rules and keys. (cuda_nvrtc_test builds yolov8n's pairs for sm_80 and sm_90.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv_test_util.h"
#include "cuda_emulator.h"

namespace yoloc::codegen::cuda::testing {
namespace {

const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
const Activation silu = Activation::kSilu, none = Activation::kNone;

// Runs every (pair, config) in the emulation and compares with reference_b2b.
void run_pairs(const std::vector<std::pair<CudaConvTask, ScheduleConfig>>& todo) {
  std::vector<CudaKernel> kernels;
  for (const auto& [t, cfg] : todo) {
    kernels.push_back(TensorCoreConvTemplate::emit(t, cfg, fmt::format("k{}", kernels.size())));
  }
  const EmulatedKernels emu(kernels);
  for (size_t i = 0; i < todo.size(); ++i) {
    const CudaConvTask& t = todo[i].first;
    SCOPED_TRACE(t.key() + " | " + todo[i].second.str());
    const CudaConvTask second = t.second_stage();
    const ConvOperands o = make_operands(first_stage(t), 40 + static_cast<uint32_t>(i));
    const Tensor want = reference_b2b(t, o);
    const Tensor packed = TensorCoreConvTemplate::pack_weights(t, o.w.data<float>());
    const Tensor packed2 = TensorCoreConvTemplate::pack_b2b_weights(t);
    const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow *
                                               second.out.stride) *
                               dtype_size(second.out_dtype),
                           0x5a);
    const std::string err = emu.launch(
        kernels[i], {{x.data(), x.size()},
                     {packed.raw(), packed.nbytes()},
                     {o.b.raw(), o.b.nbytes()},
                     {nullptr, 0},
                     {y.data(), y.size()},
                     {nullptr, 0},  // up: no upsampled copy
                     {packed2.raw(), packed2.nbytes()},
                     {t.b2b->bias.raw(), t.b2b->bias.nbytes()}});
    EXPECT_EQ(err, "");
    EXPECT_TRUE(check_output(second, y, want, 0x5a));
  }
}

std::vector<std::pair<CudaConvTask, ScheduleConfig>> with_configs(
    const std::vector<CudaConvTask>& tasks) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> out;
  for (const CudaConvTask& t : tasks) {
    EXPECT_TRUE(TensorCoreConvTemplate::matches(t)) << t.key();
    for (const ScheduleConfig& c : b2b_configs(t)) out.emplace_back(t, c);
  }
  return out;
}

CudaConvTask dense(const ConvTask& c, DType dt) { return CudaConvTask::dense(c, dt, dt); }

TEST(CudaB2bEmulated, Fp16Pairs) {
  const auto cases = with_configs({
      // 3x3 s1, 32 -> 48 channels (two column tiles of 32), into an NHWC concat slice.
      with_b2b(dense(ConvTask::make(1, 16, 9, 10, 32, 3, 1, 1, silu), f16), 48, silu, {80, 16},
               false, f16, 1),
      // 3x3 s2 from an input slice, batch 2 (tiles across images), 64 -> 64, NCHW slice.
      with_b2b(sliced(ConvTask::make(2, 16, 11, 9, 64, 3, 2, 1, silu), f16, f16, {48, 16},
                      {64, 0}, {64, 0}),
               64, none, {144, 0}, true, f16, 2),
      // The class branch's 80 channels (bn = 80), NCHW slice at 64.
      with_b2b(dense(ConvTask::make(1, 24, 7, 9, 80, 3, 1, 1, silu), f16), 80, none, {144, 64},
               true, f16, 3),
      // 24 intermediate channels (zero-padded to 32), 19 out (odd: a lone last channel), no
      // activation first, fp32 output.
      with_b2b(dense(ConvTask::make(1, 8, 6, 7, 24, 3, 1, 1, none), f16), 19, silu, {19, 0},
               false, DType::kFloat32, 4),
  });
  EXPECT_GE(cases.size(), 12u);
  const auto halo = std::count_if(cases.begin(), cases.end(),
                                  [](const auto& c) { return c.second.get("halo") > 0; });
  EXPECT_GE(halo, 3) << "halo-tile configs of the 16-channel first stages";
  const auto staged = std::count_if(cases.begin(), cases.end(),
                                    [](const auto& c) { return c.second.get("epi") == 1; });
  EXPECT_GE(staged, 6) << "staged second-stage outputs of the one-column-tile pairs";
  run_pairs(cases);
}

// The pairs above for sm_90 with a wgmma first stage (wg=2; A from im2col rows or from halo
// tiles 8 pixels wide), whose second stage runs on the rows of the first's accumulators.
TEST(CudaB2bEmulated, WarpgroupFirstStage) {
  std::vector<CudaConvTask> tasks = {
      with_b2b(dense(ConvTask::make(1, 16, 9, 10, 32, 3, 1, 1, silu), f16), 48, silu, {80, 16},
               false, f16, 1),
      with_b2b(sliced(ConvTask::make(2, 16, 11, 9, 64, 3, 2, 1, silu), f16, f16, {48, 16}, {64, 0},
                      {64, 0}),
               64, none, {144, 0}, true, f16, 2),
      with_b2b(dense(ConvTask::make(1, 32, 7, 9, 80, 3, 1, 1, silu), f16), 80, none, {144, 64},
               true, f16, 3),
      with_b2b(dense(ConvTask::make(1, 16, 8, 8, 64, 3, 2, 1, silu), bf16), 64, silu, {128, 0},
               false, bf16, 5)};
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (CudaConvTask& t : tasks) {
    t.sm = 90;
    int n = 0;
    for (const ScheduleConfig& c : b2b_configs(t)) {
      if (c.get("wg") != 2) continue;
      todo.emplace_back(t, c);
      n += 1 + (c.get("halo") == 8) * 100;
    }
    EXPECT_GE(n % 100, 2) << t.key();
    EXPECT_GE(n / 100, 1) << t.key() << ": no halo-tile wgmma config";
  }
  run_pairs(todo);
}

TEST(CudaB2bEmulated, Bf16Pair) {
  run_pairs(with_configs({with_b2b(dense(ConvTask::make(1, 16, 8, 8, 64, 3, 2, 1, silu), bf16),
                                   64, silu, {128, 0}, false, bf16, 5)}));
}

// The pairs fused in yolov8n (scaled down to a few tiles: same channels and windows).
TEST(CudaB2bEmulated, Yolov8nPairShapes) {
  std::vector<CudaConvTask> tasks;
  for (const B2bLayer& l : yolov8n_b2b_layers(f16, 80)) {
    CudaConvTask t = l.task;
    t.conv = ConvTask::make(1, t.conv.c, 6, 5, t.conv.k, t.conv.kh, t.conv.sh, t.conv.ph, t.conv.act);
    const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
    std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo = {{t, def}};
    // And on halo tiles of 8 pixels (the first stages have 16k channels).
    ScheduleConfig halo = def;
    halo.set("halo", 8);
    EXPECT_TRUE(TensorCoreConvTemplate::valid(t, halo)) << t.key() << " | " << halo.str();
    todo.emplace_back(t, halo);
    run_pairs(todo);
  }
}

TEST(CudaB2bRules, ValidityKeysAndSharedMemory) {
  const CudaConvTask lone = dense(ConvTask::make(1, 64, 20, 20, 80, 3, 1, 1, silu), f16);
  const CudaConvTask t = with_b2b(lone, 80, none, {144, 64}, true, f16, 1);
  EXPECT_EQ(t.key(), lone.key() + " b2b k2=80 none ->f16 out144+64 nchw");
  EXPECT_FALSE(nhwc_output_twin(t.key()).has_value());
  EXPECT_EQ(first_stage(t).key(), lone.key());
  // The tile must hold all 80 channels; no split-K, no staged epilogue.
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
  EXPECT_EQ(def.get("bn"), 80) << def.str();
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, def));
  ScheduleConfig c = def;
  c.set("bn", 64);
  c.set("wn", 32);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, c));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(first_stage(t), c));
  // A 64-channel pair: split-K (sm_90) is valid for the lone conv only.
  CudaConvTask t64 = with_b2b(dense(ConvTask::make(1, 64, 20, 20, 64, 3, 1, 1, silu), f16), 64,
                              none, {144, 0}, true, f16, 1);
  t64.sm = 90;
  const ScheduleConfig def64 = TensorCoreConvTemplate::default_config(t64);
  EXPECT_EQ(def64.get("bn"), 64);
  c = def64;
  c.set("splitk", 2);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t64, c)) << c.str();
  EXPECT_TRUE(TensorCoreConvTemplate::valid(first_stage(t64), c)) << c.str();
  // The staged epilogue (epi=1) stages the second stage's output: one column tile of 16-bit
  // values (not 48 channels in tiles of 32, nor a float32 output), and an NCHW tile (channel rows
  // of bm + 8 halves) no larger than the intermediate's place.
  c = def64;
  c.set("epi", 1);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t64, c)) << c.str();
  EXPECT_NE(TensorCoreConvTemplate::emit(t64, c, "k").source.find("B2B_EPI = 1"),
            std::string::npos);
  const CudaConvTask two_tiles =
      with_b2b(dense(ConvTask::make(1, 16, 9, 10, 32, 3, 1, 1, silu), f16), 48, silu, {80, 16},
               false, f16, 1);
  c = TensorCoreConvTemplate::default_config(two_tiles);
  EXPECT_EQ(c.get("bn"), 32);
  c.set("epi", 1);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(two_tiles, c)) << c.str();
  CudaConvTask f32_out = t64;
  f32_out.b2b->out_dtype = DType::kFloat32;
  c = TensorCoreConvTemplate::default_config(f32_out);
  c.set("epi", 1);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(f32_out, c)) << c.str();
  // bn 144 > bm 64: the channel rows (144 x 72 halves) outgrow the place of the pixel rows (64 x
  // 152) and of the ring.
  CudaConvTask wide_nchw = with_b2b(dense(ConvTask::make(1, 64, 20, 20, 144, 3, 1, 1, silu), f16),
                                    144, none, {144, 0}, true, f16, 1);
  c = TensorCoreConvTemplate::space(wide_nchw).complete(ScheduleConfig(
      {{"bm", 64}, {"bn", 144}, {"bk", 16}, {"wm", 64}, {"wn", 48}, {"stages", 2}, {"epi", 1}}));
  EXPECT_FALSE(TensorCoreConvTemplate::valid(wide_nchw, c)) << c.str();
  c.set("epi", 0);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(wide_nchw, c)) << c.str();
  // wg=2 rings have rows of bk halves, unpadded (the kernel's W2_AT): 80 channels in a column tile
  // of 256 over bm 64, 3 stages of 16 (tuned on the H200, its static_assert failed the build).
  CudaConvTask heads = with_b2b(dense(ConvTask::make(128, 80, 20, 20, 80, 3, 1, 1, silu), f16), 80,
                                none, {80, 0}, true, f16, 1);
  heads.sm = 90;
  c = TensorCoreConvTemplate::space(heads).complete(ScheduleConfig({{"bm", 64},
                                                                    {"bn", 256},
                                                                    {"bk", 16},
                                                                    {"wm", 16},
                                                                    {"wn", 256},
                                                                    {"stages", 3},
                                                                    {"wg", 2},
                                                                    {"epi", 1}}));
  EXPECT_FALSE(TensorCoreConvTemplate::valid(heads, c)) << c.str();
  c.set("epi", 0);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(heads, c)) << c.str();
  const CudaKernel k = TensorCoreConvTemplate::emit(t, def, "k");
  EXPECT_EQ(k.grid[1], 1u);
  EXPECT_NE(k.source.find("const void* w2_, const float* __restrict__ bias2"), std::string::npos);
  EXPECT_EQ(TensorCoreConvTemplate::emit(lone, TensorCoreConvTemplate::default_config(lone), "k")
                .source.find("w2_"),
            std::string::npos);
  // 256 -> 256 (yolov8n's model.7 + model.8 cv1): the second weights alone are 128 KiB, more
  // than the 99 KiB a pair may use on any architecture (sm_90's 227 KiB serve lone convs only).
  CudaConvTask big = with_b2b(dense(ConvTask::make(1, 128, 40, 40, 256, 3, 2, 1, silu), f16), 256,
                              silu, {512, 0}, false, f16, 2);
  for (int sm : {86, 90}) {
    big.sm = sm;
    EXPECT_FALSE(TensorCoreConvTemplate::matches(big)) << sm;
    EXPECT_TRUE(TensorCoreConvTemplate::matches(first_stage(big))) << sm;
  }
  // The intermediate is the activation dtype, NHWC, without residual.
  CudaConvTask wide = t;
  wide.out_dtype = DType::kFloat32;
  EXPECT_FALSE(TensorCoreConvTemplate::matches(wide));
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
