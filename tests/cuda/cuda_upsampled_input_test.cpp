// The tensor-core conv's upsampled input (CudaConvTask::up_in: a 1x1 conv reading part of its
// input concat from the source of the nearest Resize that writes it): the kernel in the host
// emulation against the reference executor on the materialised concat, over dtypes, factors,
// slices, residual, split-K, halo tiles and the wgmma paths, with the concat's upsampled channels
// holding NaN bytes (a read of them fails); its validity rules and key; its kernels built by NVRTC.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_emulator.h"
#include "nvrtc_test_util.h"
#include "upsampled_input_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace upsampled_input_tests {  // named: the unity build joins this file with others

using namespace upsampled_input;

// Every (task, config) in the emulation (upsampled_input_test_util.h's buffers).
void run_cases(const std::vector<std::pair<CudaConvTask, ScheduleConfig>>& todo) {
  std::vector<CudaKernel> kernels;
  for (size_t i = 0; i < todo.size(); ++i) {
    ASSERT_TRUE(TensorCoreConvTemplate::valid(todo[i].first, todo[i].second))
        << todo[i].first.key() << " | " << todo[i].second.str();
    kernels.push_back(TensorCoreConvTemplate::emit(todo[i].first, todo[i].second,
                                                   fmt::format("k{}", i)));
  }
  const EmulatedKernels emu(kernels);
  for (size_t i = 0; i < todo.size(); ++i) {
    const auto& [t, cfg] = todo[i];
    SCOPED_TRACE(t.key() + " | " + cfg.str());
    UpInBuffers b = up_in_buffers(t, 101 + 10 * static_cast<uint32_t>(i));
    // (x, w, bias, res, y, up), then uin (tc_conv_template.h).
    const std::string err = emu.launch(
        kernels[i], {{b.x.data(), b.x.size()},
                     {b.packed.raw(), b.packed.nbytes()},
                     {b.o.b.data<float>(), static_cast<size_t>(b.o.b.nbytes())},
                     {t.conv.residual ? b.res.data() : nullptr, b.res.size()},
                     {b.y.data(), b.y.size()},
                     {nullptr, 0},
                     {b.uin.data(), b.uin.size()}});
    EXPECT_EQ(err, "");
    EXPECT_TRUE(check_output(t, b.y, b.o.want, 0x5a));
  }
}

TEST(CudaUpsampledInputEmulated, Fp16) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (const CudaConvTask& t : up_in_tasks(DType::kFloat16)) {
    const auto c = up_in_cases(t);
    todo.insert(todo.end(), c.begin(), c.end());
  }
  int64_t wg = 0, splitk = 0, epi = 0, halo = 0, wg_halo = 0, pers = 0;
  for (const auto& [t, cfg] : todo) {
    wg += cfg.get("wg") == 2;
    splitk += cfg.get("splitk") > 1;
    epi += cfg.get("epi");
    halo += cfg.get("halo") > 0;
    wg_halo += cfg.get("wg") == 2 && cfg.get("halo") == 8;
    pers += cfg.get("pers") > 0;
  }
  EXPECT_GE(todo.size(), 20u);
  EXPECT_GE(wg, 4);
  EXPECT_GE(splitk, 2);
  EXPECT_GE(epi, 4);
  EXPECT_GE(halo, 6);
  EXPECT_GE(wg_halo, 2);
  EXPECT_GE(pers, 1);
  run_cases(todo);
}

TEST(CudaUpsampledInputEmulated, Bf16) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (const CudaConvTask& t : up_in_tasks(DType::kBFloat16)) {
    const CudaConvTask tt = t;
    todo.emplace_back(tt, TensorCoreConvTemplate::default_config(tt));
  }
  run_cases(todo);
}

// The form's key (tuned apart from the conv reading its whole input), what the template takes
// (1x1 stride-1 convs, 16-byte pieces, no b2b pair) and the configs it allows (halo tiles too).
TEST(CudaUpsampledInputRules, ValidityAndKey) {
  const DType f16 = DType::kFloat16;
  const CudaConvTask plain = CudaConvTask::dense(
      ConvTask::make(4, 192, 80, 80, 64, 1, 1, 0, Activation::kSilu), f16, f16);
  const CudaConvTask t = with_up_in(plain, 2, 2, 0, 128, {192, 64});
  EXPECT_EQ(t.key(), plain.key() + " upin0+128 2x2 from192+64");
  EXPECT_TRUE(TensorCoreConvTemplate::matches(t));
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, def));
  ScheduleConfig halo = def;
  halo.set("halo", 8);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, halo));
  // Out of the input's channels or of the source's slice; a factor that does not divide H.
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(plain, 2, 2, 128, 128, {192, 64})));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(plain, 2, 2, 0, 128, {160, 64})));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(plain, 3, 2, 0, 128, {192, 64})));
  // Not in 16-byte pieces: the upsampled channels, the source's slice.
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(plain, 2, 2, 4, 120, {192, 64})));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(plain, 2, 2, 0, 128, {196, 66})));
  // A 3x3 conv, a strided one, a b2b pair.
  const CudaConvTask k3 = CudaConvTask::dense(
      ConvTask::make(4, 192, 80, 80, 64, 3, 1, 1, Activation::kSilu), f16, f16);
  EXPECT_TRUE(TensorCoreConvTemplate::matches(k3));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(k3, 2, 2, 0, 128, {192, 64})));
  const CudaConvTask s2 = CudaConvTask::dense(
      ConvTask::make(4, 192, 80, 80, 64, 1, 2, 0, Activation::kSilu), f16, f16);
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(s2, 2, 2, 0, 128, {192, 64})));
  const CudaConvTask pair =
      with_b2b(plain, 64, Activation::kSilu, {64, 0}, false, f16, 3);
  EXPECT_TRUE(TensorCoreConvTemplate::matches(pair));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up_in(pair, 2, 2, 0, 128, {192, 64})));
}

// yolov8n's two at batch 128 (the C2f after each neck upsampling), the default config and those
// of the test configs that are valid, with wgmma, as NVRTC builds them for sm_90 and sm_80.
TEST(CudaUpsampledInputNvrtc, Yolov8nNeckConvsBuild) {
  const DType f16 = DType::kFloat16;
  const Activation silu = Activation::kSilu;
  for (const char* arch : {"sm_90", "sm_80"}) {
    SCOPED_TRACE(arch);
    std::string source;
    std::vector<std::string> symbols;
    for (CudaConvTask t :
         {with_up_in(sliced(ConvTask::make(128, 384, 40, 40, 128, 1, 1, 0, silu), f16, f16,
                            {384, 0}, {192, 0}, {128, 0}),
                     2, 2, 0, 256, {384, 128}),
          with_up_in(sliced(ConvTask::make(128, 192, 80, 80, 64, 1, 1, 0, silu), f16, f16,
                            {192, 0}, {96, 0}, {64, 0}),
                     2, 2, 0, 128, {192, 64})}) {
      t.sm = std::string(arch) == "sm_90" ? 90 : 80;
      for (const auto& [tt, cfg] : up_in_cases(t)) {
        if (tt.sm != t.sm) continue;
        symbols.push_back(fmt::format("upin_{}", symbols.size()));
        source += TensorCoreConvTemplate::emit(tt, cfg, symbols.back()).source;
      }
    }
    ASSERT_GE(symbols.size(), 8u);
    expect_module_builds(source, symbols, arch);
  }
}

}  // namespace upsampled_input_tests
}  // namespace yoloc::codegen::cuda::testing
