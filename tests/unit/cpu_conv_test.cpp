// The CPU conv template: every kernel variant (1x1, 3x3, stride 1 and 2, padding, first-conv
// input with 3 channels, ReLU/SiLU epilogue, residual add) x several schedule configs, built
// with the host compiler and compared with the reference Conv (+ activation + Add) ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/host_compiler.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "core/error.h"
#include "op_test_util.h"

namespace yoloc::codegen::cpu {
namespace {

using testing::OpInput;
using testing::run_op;

Tensor random_tensor(Shape shape, std::mt19937& rng) {
  Tensor t(DType::kFloat32, shape);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

struct Case {
  ConvTask task;
  ScheduleConfig cfg;
  std::string symbol;
};

// Reference: Conv then the activation op then Add, through the ops' reference kernels.
Tensor reference(const ConvTask& t, const Tensor& x, const Tensor& w, const Tensor& b,
                 const Tensor& res) {
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{t.kh, t.kw});
  a.set("strides", std::vector<int64_t>{t.sh, t.sw});
  a.set("pads", std::vector<int64_t>{t.ph, t.pw, t.ph, t.pw});
  Tensor y = run_op("Conv", {x, testing::constant(w), testing::constant(b)}, a)[0];
  if (t.act == Activation::kRelu) y = run_op("Relu", {y})[0];
  if (t.act == Activation::kSilu) y = run_op("SiLU", {y})[0];
  if (t.residual) y = run_op("Add", {y, res})[0];
  return y;
}

// Several valid configs per task: the default plus register tiles, cache tiles, orders and
// unrolls that differ from it.
std::vector<ScheduleConfig> configs_of(const ConvTask& t) {
  std::vector<ScheduleConfig> out = {ConvTemplate::default_config(t)};
  const ScheduleSpace space = ConvTemplate::space(t);
  const std::vector<std::map<std::string, int64_t>> tries = {
      {{"ocb", 1}, {"owb", 1}, {"ict", 1}, {"order", 1}, {"unroll", 1}},
      {{"ocb", 2}, {"owb", 7}, {"ict", 1}, {"order", 0}, {"unroll", 16}},
      {{"ocb", 1}, {"owb", 28}, {"ict", 2}, {"order", 1}, {"unroll", 2}},
      {{"ocb", 4}, {"owb", 6}, {"ict", space.find("ict")->domain.back()}, {"order", 1},
       {"unroll", 8}},
      // Tiles that fit 16 ymm / 32 q registers too (the AVX2 and NEON ones).
      {{"ocb", 1}, {"owb", 6}, {"ict", 1}, {"order", 0}, {"unroll", 4}},
      {{"ocb", 2}, {"owb", 2}, {"ict", 2}, {"order", 1}, {"unroll", 1}}};
  for (const auto& v : tries) {
    ScheduleConfig c(v);
    if (ConvTemplate::valid(t, c)) out.push_back(c);
  }
  return out;
}

// Builds every task x configs_of for `isa` into one shared object (with the options yoloc uses
// for that ISA) and compares each kernel with the reference.
void check_tasks(const std::vector<ConvTask>& tasks, int threads,
                 CpuIsa isa = detect_host_isa()) {
  std::vector<Case> cases;
  std::string source;
  for (ConvTask t : tasks) {
    t.isa = isa;
    ASSERT_TRUE(ConvTemplate::matches(t)) << t.key();
    for (const ScheduleConfig& cfg : configs_of(t)) {
      ASSERT_TRUE(ConvTemplate::valid(t, cfg)) << cfg.str();
      Case c{t, cfg, "conv_" + std::to_string(cases.size())};
      source += ConvTemplate::emit(t, cfg, c.symbol).source;
      cases.push_back(c);
    }
  }
  const SharedObject so = compile_shared_object(source, host_compiler_options_for("c++", isa));
  runtime::KernelLibrary lib(so.bytes);
  runtime::ThreadPool pool(threads);
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    const ConvTask& t = c.task;
    SCOPED_TRACE(t.key() + " | " + c.cfg.str());
    const Tensor x = random_tensor({t.n, t.c, t.h, t.w}, rng);
    const Tensor w = random_tensor({t.k, t.c, t.kh, t.kw}, rng);
    const Tensor b = random_tensor({t.k}, rng);
    const Tensor res = random_tensor({t.n, t.k, t.oh, t.ow}, rng);
    const Tensor want = reference(t, x, w, b, res);

    const auto xin = t.c < kBlock ? std::vector<float>(x.data<float>(), x.data<float>() + x.numel())
                                   : to_nchw16c(x.data<float>(), t.n, t.c, t.h, t.w);
    // Below 16 output channels the output and residual are plain NCHW.
    const bool plain_out = t.k < kBlock;
    const float* r = res.data<float>();
    const auto xres = plain_out ? std::vector<float>(r, r + res.numel())
                                : to_nchw16c(r, t.n, t.k, t.oh, t.ow);
    const auto packed = ConvTemplate::pack_weights(t, c.cfg, w.data<float>());
    std::vector<float> out(xres.size(), std::nanf(""));
    using Fn = void (*)(const float*, const float*, const float*, const float*, float*, int64_t,
                        int64_t);
    const auto fn = reinterpret_cast<Fn>(lib.symbol(c.symbol));
    const CpuKernel k = ConvTemplate::emit(t, c.cfg, c.symbol);
    pool.parallel_for(k.work_items, [&](int64_t b0, int64_t e0) {
      fn(xin.data(), packed.data(), b.data<float>(), xres.data(), out.data(), b0, e0);
    });
    const auto got = plain_out ? out : from_nchw16c(out.data(), t.n, t.k, t.oh, t.ow);
    ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel());
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float ref = want.data<float>()[i];
      if (!(std::fabs(got[i] - ref) <= 1e-4f * std::max(1.f, std::fabs(ref))) && bad++ < 5) {
        ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << ref;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

TEST(CpuConv, PointwiseAndEpilogues) {
  check_tasks({ConvTask::make(1, 32, 9, 11, 16, 1, 1, 0),
               ConvTask::make(1, 64, 8, 8, 32, 1, 1, 0, Activation::kSilu),
               ConvTask::make(1, 48, 7, 13, 64, 1, 1, 0, Activation::kRelu, true),
               ConvTask::make(2, 16, 5, 6, 80, 1, 1, 0, Activation::kSilu)},
              2);
}

TEST(CpuConv, Spatial3x3) {
  check_tasks({ConvTask::make(1, 16, 12, 12, 32, 3, 1, 1, Activation::kSilu, true),
               ConvTask::make(1, 32, 13, 10, 64, 3, 2, 1, Activation::kSilu),
               ConvTask::make(1, 32, 6, 30, 32, 3, 1, 1, Activation::kNone),
               ConvTask::make(1, 64, 9, 9, 16, 3, 2, 0, Activation::kRelu)},
              2);
}

// The detector heads' box (4) and objectness (1) convs: one zero-padded block, K lanes stored.
TEST(CpuConv, FewOutputChannelsPlainOutput) {
  check_tasks({ConvTask::make(1, 64, 9, 11, 4, 1, 1, 0),
               ConvTask::make(2, 32, 7, 6, 1, 1, 1, 0, Activation::kSilu, true),
               ConvTask::make(1, 16, 10, 9, 5, 3, 2, 1, Activation::kRelu),
               ConvTask::make(1, 3, 9, 9, 8, 3, 1, 1, Activation::kNone, true)},
              2);
}

TEST(CpuConv, FirstConvThreeChannels) {
  check_tasks({ConvTask::make(2, 3, 20, 22, 16, 3, 2, 1, Activation::kSilu),
               ConvTask::make(1, 3, 9, 17, 32, 3, 1, 1, Activation::kNone, true)},
              1);
}

// The vector-extension kernels (the code AVX2, NEON and generic builds get), built for AVX2
// (x86-64-v3) and for the compiler's default target (SSE2 on x86-64), on every kernel variant.
class CpuConvPortable : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(CpuConvPortable, MatchesReference) {
  const CpuIsa isa = GetParam();
  if (!host_can_run(isa)) GTEST_SKIP() << "this machine does not run " << isa_name(isa);
  check_tasks({ConvTask::make(1, 64, 8, 8, 32, 1, 1, 0, Activation::kSilu),
               ConvTask::make(1, 48, 7, 13, 64, 1, 1, 0, Activation::kRelu, true),
               ConvTask::make(1, 16, 12, 12, 32, 3, 1, 1, Activation::kSilu, true),
               ConvTask::make(1, 32, 13, 10, 64, 3, 2, 1, Activation::kSilu),
               ConvTask::make(1, 64, 9, 9, 16, 3, 2, 0, Activation::kRelu),
               ConvTask::make(2, 3, 20, 22, 16, 3, 2, 1, Activation::kSilu)},
              2, isa);
}

INSTANTIATE_TEST_SUITE_P(Isas, CpuConvPortable,
                         ::testing::Values(CpuIsa::kAvx2, CpuIsa::kGeneric),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

TEST(CpuConv, PortableSourceHasNoIntrinsics) {
  ConvTask t = ConvTask::make(1, 32, 8, 8, 32, 3, 1, 1, Activation::kSilu);
  t.isa = CpuIsa::kAvx512;
  EXPECT_NE(ConvTemplate::emit(t, ConvTemplate::default_config(t), "k").source.find("_mm512"),
            std::string::npos);
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kNeon, CpuIsa::kGeneric}) {
    t.isa = isa;
    const std::string src = ConvTemplate::emit(t, ConvTemplate::default_config(t), "k").source;
    EXPECT_EQ(src.find("immintrin"), std::string::npos) << isa_name(isa);
    EXPECT_EQ(src.find("_mm"), std::string::npos) << isa_name(isa);
    EXPECT_NE(t.key().find(isa_name(isa)), std::string::npos) << t.key();
  }
}

// Register tiles per ISA: ocb x owb accumulators + ocb weights + 1 broadcast input, a 16-float
// vector taking 1 of 32 zmm (AVX-512), 2 of 16 ymm (AVX2), 4 of 32 q (NEON) or 4 of 16 xmm.
TEST(CpuConv, RegisterTilePerIsa) {
  ConvTask t = ConvTask::make(1, 64, 20, 20, 64, 3, 1, 1);
  const auto fits = [&](CpuIsa isa, int64_t ocb, int64_t owb) {
    t.isa = isa;
    return ConvTemplate::valid(
        t, ScheduleConfig({{"ocb", ocb}, {"owb", owb}, {"ict", 1}, {"order", 0}, {"unroll", 1}}));
  };
  EXPECT_TRUE(fits(CpuIsa::kAvx512, 4, 6));    // 24 + 4 + 1 = 29 zmm
  EXPECT_FALSE(fits(CpuIsa::kAvx512, 4, 7));   // 33
  EXPECT_TRUE(fits(CpuIsa::kAvx512, 1, 20));   // 22
  EXPECT_TRUE(fits(CpuIsa::kAvx2, 1, 6));      // (6 + 1) * 2 + 1 = 15 ymm
  EXPECT_FALSE(fits(CpuIsa::kAvx2, 1, 7));     // 17
  EXPECT_TRUE(fits(CpuIsa::kAvx2, 2, 2));      // (4 + 2) * 2 + 1 = 13
  EXPECT_FALSE(fits(CpuIsa::kAvx2, 2, 4));     // 21
  EXPECT_FALSE(fits(CpuIsa::kAvx2, 4, 1));     // 17
  EXPECT_TRUE(fits(CpuIsa::kNeon, 1, 6));      // (6 + 1) * 4 + 1 = 29 q
  EXPECT_FALSE(fits(CpuIsa::kNeon, 1, 7));     // 33
  EXPECT_TRUE(fits(CpuIsa::kGeneric, 1, 2));   // (2 + 1) * 4 + 1 = 13 xmm
  EXPECT_FALSE(fits(CpuIsa::kGeneric, 2, 1));  // 17
  // The default config is valid for every ISA and task shape.
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kNeon, CpuIsa::kGeneric}) {
    for (ConvTask u : {ConvTask::make(1, 3, 640, 640, 16, 3, 2, 1),
                       ConvTask::make(1, 256, 20, 20, 256, 1, 1, 0),
                       ConvTask::make(1, 64, 1, 1, 80, 3, 1, 1)}) {
      u.isa = isa;
      EXPECT_TRUE(ConvTemplate::valid(u, ConvTemplate::default_config(u))) << u.key();
    }
  }
}

TEST(CpuConv, SpaceAndValidity) {
  // The register budgets below are AVX-512's (32 registers, one per 16-float block), whatever
  // this machine has.
  ConvTask t = ConvTask::make(1, 64, 20, 20, 80, 3, 1, 1);
  t.isa = CpuIsa::kAvx512;
  const ScheduleSpace s = ConvTemplate::space(t);
  EXPECT_TRUE(ConvTemplate::valid(t, ConvTemplate::default_config(t)));
  // K/16 = 5: a 2-block register tile does not divide it; 6x8 tiles overflow the registers.
  EXPECT_FALSE(ConvTemplate::valid(
      t, ScheduleConfig({{"ocb", 2}, {"owb", 8}, {"ict", 4}, {"order", 0}, {"unroll", 1}})));
  EXPECT_FALSE(ConvTemplate::valid(
      t, ScheduleConfig({{"ocb", 5}, {"owb", 8}, {"ict", 4}, {"order", 0}, {"unroll", 1}})));
  EXPECT_TRUE(ConvTemplate::valid(
      t, ScheduleConfig({{"ocb", 5}, {"owb", 4}, {"ict", 4}, {"order", 0}, {"unroll", 1}})));
  EXPECT_FALSE(ConvTemplate::valid(
      t, ScheduleConfig({{"ocb", 5}, {"owb", 4}, {"ict", 3}, {"order", 0}, {"unroll", 1}})));
  EXPECT_FALSE(ConvTemplate::matches(ConvTask::make(1, 24, 8, 8, 16, 1, 1, 0)));
  EXPECT_FALSE(ConvTemplate::matches(ConvTask::make(1, 32, 8, 8, 24, 1, 1, 0)));
  // K < 16: a plain output holds no partial sums, so the cache tile takes every input block.
  ConvTask few = ConvTask::make(1, 64, 8, 8, 4, 1, 1, 0);
  few.isa = CpuIsa::kAvx512;
  EXPECT_TRUE(ConvTemplate::matches(few));
  EXPECT_TRUE(ConvTemplate::valid(
      few, ScheduleConfig({{"ocb", 1}, {"owb", 8}, {"ict", 4}, {"order", 0}, {"unroll", 1}})));
  EXPECT_FALSE(ConvTemplate::valid(
      few, ScheduleConfig({{"ocb", 1}, {"owb", 8}, {"ict", 2}, {"order", 0}, {"unroll", 1}})));
  int64_t valid = 0;
  for (int64_t i = 0; i < s.size(); ++i) valid += ConvTemplate::valid(t, ScheduleConfig::at(s, i));
  EXPECT_GT(valid, 50);
}

TEST(CpuIsa, NamesAndHost) {
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kNeon, CpuIsa::kGeneric}) {
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
    EXPECT_EQ(registers_per_block(isa) * isa_info(isa).vector_floats, kBlock);
  }
  EXPECT_FALSE(parse_isa("sse9"));
  EXPECT_EQ(isa_names(), "avx512, avx2, neon, generic");
  EXPECT_TRUE(host_can_run(detect_host_isa()));
  EXPECT_TRUE(host_can_run(CpuIsa::kGeneric));
#if defined(__x86_64__)
  EXPECT_FALSE(host_can_run(CpuIsa::kNeon));
  EXPECT_EQ(detect_host_isa() == CpuIsa::kAvx512, __builtin_cpu_supports("avx512f") != 0);
#endif
}

TEST(CpuIsa, CompilerOptions) {
  const std::string arch = compiler_arch("c++");
  ASSERT_EQ(arch, host_arch()) << "the test machine's c++ is expected to be a native compiler";
  EXPECT_EQ(compiler_arch("/nonexistent/c++"), "");
  EXPECT_EQ(default_isa_for_compiler("c++"), detect_host_isa());
  const auto has = [](const HostCompilerOptions& o, const std::string& f) {
    return std::find(o.flags.begin(), o.flags.end(), f) != o.flags.end();
  };
  const HostCompilerOptions host = host_compiler_options_for("c++", detect_host_isa());
  EXPECT_TRUE(has(host, "-march=native"));
  EXPECT_TRUE(has(host, "-shared") && has(host, "-fPIC") && has(host, "-ffp-contract=fast"));
  const HostCompilerOptions generic = host_compiler_options_for("c++", CpuIsa::kGeneric);
  EXPECT_TRUE(std::none_of(generic.flags.begin(), generic.flags.end(),
                           [](const std::string& f) { return f.rfind("-march", 0) == 0; }));
#if defined(__x86_64__)
  if (detect_host_isa() != CpuIsa::kAvx2) {
    EXPECT_TRUE(has(host_compiler_options_for("c++", CpuIsa::kAvx2), "-march=x86-64-v3"));
  }
  try {
    host_compiler_options_for("c++", CpuIsa::kNeon);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("aarch64"), std::string::npos) << e.what();
  }
#endif
  if (compiler_arch("aarch64-linux-gnu-g++") == "aarch64") {
    EXPECT_EQ(default_isa_for_compiler("aarch64-linux-gnu-g++"), CpuIsa::kNeon);
    const HostCompilerOptions o = host_compiler_options_for("aarch64-linux-gnu-g++", CpuIsa::kNeon);
    EXPECT_EQ(o.cxx, "aarch64-linux-gnu-g++");
    EXPECT_TRUE(has(o, "-march=armv8-a"));
  }
}

TEST(CpuConv, CompilerErrorIsUserErrorWithLog) {
  try {
    compile_shared_object("int main( { return 0; }\n");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("compiler log"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernels.cpp"), std::string::npos) << e.what();
  }
  HostCompilerOptions missing;
  missing.cxx = "/nonexistent/c++";
  EXPECT_THROW(compile_shared_object("int x;", missing), UserError);
}

}  // namespace
}  // namespace yoloc::codegen::cpu
