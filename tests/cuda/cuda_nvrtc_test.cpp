// NVRTC: every CUDA conv template (tensor-core, SIMT, direct, depthwise, stem pair) x several
// configs (the default among them; NHWC and NCHW outputs; the tensor-core template's
// back-to-back pairs)
// builds for sm_90, its default configs
// for sm_80, with the instructions the template is about in its PTX and no register spills in
// the default configs;
// compile errors and unknown architectures are UserErrors that say what and where.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <regex>
#include <set>

#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "conv_test_util.h"
#include "core/error.h"
#include "stem_pair_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

// yolov8n-like layers plus the awkward cases of the emulated tests.
std::vector<CudaConvTask> tasks(DType dtype, DType out) {
  return {CudaConvTask::dense(ConvTask::make(1, 3, 640, 640, 16, 3, 2, 1, Activation::kSilu), dtype,
                              out),
          CudaConvTask::dense(ConvTask::make(1, 128, 40, 40, 128, 3, 1, 1, Activation::kSilu),
                              dtype, out),
          sliced(ConvTask::make(1, 16, 160, 160, 16, 3, 1, 1, Activation::kSilu, true), dtype, out,
                 {16, 0}, {48, 32}, {48, 16}),
          CudaConvTask::dense(ConvTask::make(2, 64, 20, 20, 80, 1, 1, 0), dtype, DType::kFloat32),
          sliced(ConvTask::make(1, 12, 7, 6, 20, 3, 1, 1, Activation::kRelu), dtype,
                 DType::kFloat16, {12, 0}, {21, 1}, {20, 0}),
          // NCHW outputs: a detect head's 1x1 box conv, a residual into channel slices.
          nchw_out(CudaConvTask::dense(ConvTask::make(2, 64, 80, 80, 64, 1, 1, 0), dtype, out)),
          nchw_out(sliced(ConvTask::make(1, 16, 20, 20, 16, 3, 1, 1, Activation::kSilu, true),
                          dtype, out, {16, 0}, {48, 32}, {48, 16}))};
}

struct Module {
  std::string source;                     // every kernel
  std::string default_source;             // the default configs' kernels
  std::vector<std::string> symbols;
  std::vector<std::string> default_symbols;
  void add(const std::string& kernel_source, const std::string& sym, bool is_default) {
    source += kernel_source;
    symbols.push_back(sym);
    if (is_default) {
      default_source += kernel_source;
      default_symbols.push_back(sym);
    }
  }
};

// Every config of tc_configs for fp16 (l1 and epi variants among them), the defaults for bf16
// and those with l1=1, epi=1 where valid.
Module tensor_core_module() {
  Module m;
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (const CudaConvTask& t : tasks(d, d)) {
      const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
      std::vector<ScheduleConfig> cfgs = {def};
      if (d == DType::kFloat16) {
        cfgs = tc_configs(t);
      } else if (TensorCoreConvTemplate::valid(t, with_l1_epi(def, 1, 1))) {
        cfgs.push_back(with_l1_epi(def, 1, 1));
      }
      for (const ScheduleConfig& cfg : cfgs) {
        const std::string sym = fmt::format("tc_{}", m.symbols.size());
        m.add(TensorCoreConvTemplate::emit(t, cfg, sym).source, sym, cfg == def);
      }
    }
  }
  return m;
}

// Every config of simt_configs with fp32 output, the defaults with fp16 output.
Module simt_module() {
  Module m;
  for (DType out : {DType::kFloat32, DType::kFloat16}) {
    for (const CudaConvTask& t : tasks(DType::kFloat32, out)) {
      const ScheduleConfig def = SimtConvTemplate::default_config(t);
      const auto cfgs = out == DType::kFloat32 ? simt_configs(t) : std::vector<ScheduleConfig>{def};
      for (const ScheduleConfig& cfg : cfgs) {
        const std::string sym = fmt::format("simt_{}", m.symbols.size());
        m.add(SimtConvTemplate::emit(t, cfg, sym).source, sym, cfg == def);
      }
    }
  }
  return m;
}

// The direct template: every config of direct_configs (FMA and MMA) for the stems on the image
// (YOLOv8's 3x3 and YOLOv5's 6x6, fp16 out), the defaults for bf16 (MMA) and fp32 (FMA), a
// residual into a concat slice, and NHWC inputs.
Module direct_module() {
  Module m;
  const Activation silu = Activation::kSilu;
  const auto image = [](const ConvTask& conv, DType dtype, DType out,
                        DType image_dtype = DType::kFloat32) {
    CudaConvTask t = CudaConvTask::dense(conv, dtype, out);
    t.in_nchw = true;
    t.image_dtype = image_dtype;
    return t;
  };
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16, f32 = DType::kFloat32;
  const std::vector<std::pair<CudaConvTask, bool>> tasks = {
      {image(ConvTask::make(1, 3, 640, 640, 16, 3, 2, 1, silu), f16, f16), true},
      {image(ConvTask::make(1, 3, 640, 640, 16, 6, 2, 2, silu), f16, f16), true},
      {image(ConvTask::make(1, 3, 640, 640, 48, 3, 2, 1, silu), bf16, bf16), false},
      // fp16 images (--io-precision fp16): the pairs path among direct_configs.
      {image(ConvTask::make(1, 3, 640, 640, 16, 3, 2, 1, silu), f16, f16, f16), true},
      {image(ConvTask::make(1, 3, 640, 640, 16, 6, 2, 2, silu), bf16, bf16, bf16), true},
      {image(ConvTask::make(1, 3, 640, 640, 32, 3, 2, 1, silu), f32, f32), false},
      {sliced(ConvTask::make(1, 3, 80, 80, 32, 3, 1, 1, silu, true), f16, f16, {3, 0}, {64, 32},
              {32, 0}),
       false},
      {sliced(ConvTask::make(1, 4, 20, 20, 19, 3, 1, 1, Activation::kRelu), f32, f16, {12, 4},
              {21, 1}, {19, 0}),
       false}};
  for (const auto& [t, all] : tasks) {
    const ScheduleConfig def = DirectConvTemplate::default_config(t);
    for (const ScheduleConfig& cfg : all ? direct_configs(t) : std::vector<ScheduleConfig>{def}) {
      const std::string sym = fmt::format("direct_{}", m.symbols.size());
      m.add(DirectConvTemplate::emit(t, cfg, sym).source, sym, cfg == def);
    }
  }
  return m;
}

// The depthwise template: every config of dw_configs for YOLOX-nano's stride-2 and stride-1
// DWConvs (fp16), the defaults for bf16 and fp32, a residual into slices with an NCHW output, and
// an odd channel count (element loads).
Module dw_module() {
  Module m;
  const Activation silu = Activation::kSilu;
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16, f32 = DType::kFloat32;
  const std::vector<std::pair<CudaConvTask, bool>> tasks = {
      {CudaConvTask::dense(depthwise(ConvTask::make(1, 16, 208, 208, 16, 3, 2, 1, silu)), f16, f16),
       true},
      {CudaConvTask::dense(depthwise(ConvTask::make(8, 64, 52, 52, 64, 3, 1, 1, silu)), f16, f16),
       true},
      {CudaConvTask::dense(depthwise(ConvTask::make(1, 128, 26, 26, 128, 3, 1, 1, silu)), bf16,
                           bf16),
       false},
      {CudaConvTask::dense(depthwise(ConvTask::make(1, 32, 40, 40, 32, 5, 1, 2, silu)), f32, f32),
       false},
      {nchw_out(sliced(depthwise(ConvTask::make(1, 16, 20, 20, 16, 3, 1, 1, silu, true)), f16, f16,
                       {16, 0}, {48, 32}, {16, 0})),
       false},
      {CudaConvTask::dense(depthwise(ConvTask::make(1, 7, 20, 20, 7, 3, 1, 1)), f16, f32), false}};
  for (const auto& [t, all] : tasks) {
    const ScheduleConfig def = DwConvTemplate::default_config(t);
    for (const ScheduleConfig& cfg : all ? dw_configs(t) : std::vector<ScheduleConfig>{def}) {
      const std::string sym = fmt::format("dw_{}", m.symbols.size());
      m.add(DwConvTemplate::emit(t, cfg, sym).source, sym, cfg == def);
    }
  }
  return m;
}

// ptxas' report (--verbose) of one kernel: "Function properties for <sym>", then "N bytes stack
// frame, N bytes spill stores, ..." and "Used N registers"; {spill store bytes, registers} or
// {-1, -1} when absent.
std::pair<int, int> ptxas_report(const std::string& log, const std::string& sym) {
  const std::regex re("Function properties for " + sym +
                      "\\n[^\\n]*?\\d+ bytes stack frame, (\\d+) bytes spill stores[^\\n]*\\n"
                      "[^\\n]*?Used (\\d+) registers");
  std::smatch m;
  if (!std::regex_search(log, m, re)) return {-1, -1};
  return {std::stoi(m[1].str()), std::stoi(m[2].str())};
}

// Every kernel of m for sm_90 (with `instructions` in the PTX), the default configs' kernels for
// sm_80 (every template builds for both; the configs differ only in constants).
void build_all(const Module& m, const std::vector<std::string>& instructions) {
  for (const char* arch : {"sm_90", "sm_80"}) {
    SCOPED_TRACE(arch);
    const bool all = std::string(arch) == "sm_90";
    const std::vector<std::string>& symbols = all ? m.symbols : m.default_symbols;
    ASSERT_FALSE(symbols.empty());
    NvrtcOptions opts;
    opts.arch = arch;
    opts.extra_options = {"--ptxas-options=--verbose"};
    const CompiledModule out =
        nvrtc_compile(all ? m.source : m.default_source, symbols.front(), opts);
    EXPECT_GT(out.cubin.size(), 1000u);
    EXPECT_EQ(out.cubin.compare(0, 4,
                                "\x7f"
                                "ELF"),
              0)
        << "the cubin is not an ELF image";
    EXPECT_NE(out.ptx.find(".target " + std::string(arch)), std::string::npos);
    for (const std::string& sym : symbols) {
      EXPECT_NE(out.ptx.find(".entry " + sym + "("), std::string::npos) << sym;
    }
    for (const std::string& ins : all ? instructions : std::vector<std::string>{}) {
      EXPECT_NE(out.ptx.find(ins), std::string::npos) << ins;
    }
    // A default config may spill a word or two (ptxas does that at low register counts), not
    // its accumulators: that would be hundreds of bytes.
    for (const std::string& sym : m.default_symbols) {
      const auto [spill, regs] = ptxas_report(out.log, sym);
      EXPECT_GE(regs, 16) << sym << ": no ptxas report in\n" << out.log;
      EXPECT_LE(spill, 16) << sym << " (default config) spills " << spill << " bytes";
    }
  }
}

TEST(CudaNvrtc, TensorCoreTemplateBuilds) {
  build_all(tensor_core_module(),
            {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
             "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
             "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global",
             "cp.async.ca.shared.global", "st.global.v4", "cp.async.wait_group", "cvt.rn.bf16.f32",
             "cvt.rn.f16.f32"});
}

// Warpgroup MMA (wg=1 and 2): the tc_configs with wg of yolov8n-like layers for sm_90 (fp16 and
// bf16, im2col rows and halo tiles, A from registers and from shared memory, several warp tiles'
// N; b2b pairs with a wg=2 first stage) build for sm_90a, with wgmma in the PTX, no
// spills, and no wgmma that ptxas had to serialize (its warning "wgmma.mma_async instructions are
// serialized": registers it could not keep apart while an MMA runs). The module begins with
// mma.sync kernels (wg=0) of the same warp tiles' N: kernels of one module (as the GPU tests
// build them) must not name a wgmma instruction that a later kernel specializes.
TEST(CudaNvrtc, TensorCoreWarpgroupBuildsForSm90a) {
  Module m;
  int ss = 0, ss_halo = 0, persistent = 0;
  std::set<int64_t> plain_wn, wgmma_wn;
  for (CudaConvTask t : tasks(DType::kFloat16, DType::kFloat16)) {
    t.sm = 90;
    for (const ScheduleConfig& cfg : tc_configs(t)) {
      if (cfg.get("wg") != 0 || !plain_wn.insert(cfg.get("wn")).second) continue;
      const std::string sym = fmt::format("wg_{}", m.symbols.size());
      m.add(TensorCoreConvTemplate::emit(t, cfg, sym).source, sym, false);
    }
  }
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (CudaConvTask t : tasks(d, d)) {
      t.sm = 90;
      for (const ScheduleConfig& cfg : tc_configs(t)) {
        if (cfg.get("wg") == 0) continue;
        if (d == DType::kFloat16) wgmma_wn.insert(cfg.get("wn"));
        ss += cfg.get("wg") == 2;
        ss_halo += cfg.get("wg") == 2 && cfg.get("halo") == 8;
        persistent += cfg.get("pers") == 1;
        const std::string sym = fmt::format("wg_{}", m.symbols.size());
        m.add(TensorCoreConvTemplate::emit(t, cfg, sym).source, sym, false);
      }
    }
  }
  // yolov8n's b2b pairs with a wgmma first stage.
  int pairs = 0;
  for (const B2bLayer& l : yolov8n_b2b_layers(DType::kFloat16, 90)) {
    for (const ScheduleConfig& cfg : b2b_configs(l.task)) {
      if (cfg.get("wg") != 2) continue;
      const std::string sym = fmt::format("wg_{}", m.symbols.size());
      m.add(TensorCoreConvTemplate::emit(l.task, cfg, sym).source, sym, false);
      ++pairs;
    }
  }
  ASSERT_GE(m.symbols.size(), 10u);
  ASSERT_GE(ss, 6);
  ASSERT_GE(ss_halo, 3);  // A from halo tiles
  ASSERT_GE(persistent, 3);  // persistent blocks, one and two teams
  ASSERT_GE(pairs, 4);
  std::vector<int64_t> shared_wn;
  std::set_intersection(plain_wn.begin(), plain_wn.end(), wgmma_wn.begin(), wgmma_wn.end(),
                        std::back_inserter(shared_wn));
  ASSERT_FALSE(shared_wn.empty());
  NvrtcOptions opts;
  opts.arch = "sm_90";
  opts.extra_options = {"--ptxas-options=--verbose"};
  const CompiledModule out = nvrtc_compile(m.source, m.symbols.front(), opts);
  EXPECT_EQ(out.arch, "sm_90");
  EXPECT_NE(out.ptx.find(".target sm_90a"), std::string::npos);
  for (const char* ins : {"wgmma.mma_async.sync.aligned.m64n", ".f32.f16.f16", ".f32.bf16.bf16",
                          "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                          "wgmma.wait_group.sync.aligned"}) {
    EXPECT_NE(out.ptx.find(ins), std::string::npos) << ins;
  }
  // Both forms: A from registers (4 of them) and from shared memory (a descriptor).
  EXPECT_TRUE(std::regex_search(out.ptx, std::regex(R"(\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd)")));
  EXPECT_TRUE(std::regex_search(out.ptx, std::regex(R"(\}, %rd\d+, %rd\d+, p, 1, 1, 0, 0;)")));
  for (const std::string& sym : m.symbols) {
    EXPECT_NE(out.ptx.find(".entry " + sym + "("), std::string::npos) << sym;
    EXPECT_EQ(ptxas_report(out.log, sym).first, 0) << sym << " spills";
  }
  EXPECT_EQ(out.log.find("serialized"), std::string::npos) << out.log;
}

// An input of 2^30 elements (64 images of 512x512x64): its element offsets no longer fit the
// 32-bit arithmetic of the 16-byte loads (the kernel's X_INT), so the loads take 64-bit offsets;
// that path builds too, with im2col rows and with halo tiles.
TEST(CudaNvrtc, TensorCoreWideInputBuilds) {
  const CudaConvTask t =
      CudaConvTask::dense(ConvTask::make(64, 64, 512, 512, 64, 3, 1, 1, Activation::kSilu),
                          DType::kFloat16, DType::kFloat16);
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
  Module m;
  m.add(TensorCoreConvTemplate::emit(t, def, "wide_rows").source, "wide_rows", true);
  ScheduleConfig halo = with_halo(with_l1_epi(def, 0, 0), 16);
  halo.set("bk", 32);
  ASSERT_TRUE(TensorCoreConvTemplate::valid(t, halo)) << halo.str();
  m.add(TensorCoreConvTemplate::emit(t, halo, "wide_halo").source, "wide_halo", false);
  const std::string src = m.source;
  EXPECT_NE(src.find("N = 64, C = 64, H = 512, W = 512"), std::string::npos);
  build_all(m, {"cp.async.cg.shared.global", "ldmatrix.sync.aligned", "mma.sync.aligned.m16n8k16"});
}

// Split-K (sm_90 thread-block clusters): yolov8n's small deep layers at batch 1 (their defaults
// split) and a bf16 residual into slices, with 2, 4 and 8 splits, build for sm_90 with the
// cluster shape in the PTX and no spills in the defaults; for sm_80 they are a compile error
// that says why.
TEST(CudaNvrtc, TensorCoreSplitKBuildsForSm90) {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  std::vector<CudaConvTask> tasks = {
      CudaConvTask::dense(ConvTask::make(1, 256, 20, 20, 144, 3, 1, 1, Activation::kSilu), f16,
                          f16),
      CudaConvTask::dense(ConvTask::make(1, 512, 20, 20, 256, 1, 1, 0, Activation::kSilu), f16,
                          f16),
      sliced(ConvTask::make(1, 128, 40, 40, 128, 3, 1, 1, Activation::kSilu, true), bf16, bf16,
             {128, 0}, {384, 256}, {128, 0})};
  Module m;
  for (CudaConvTask& t : tasks) {
    t.sm = 90;
    const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
    std::vector<ScheduleConfig> cfgs = {def};
    for (int64_t s : {2, 4, 8}) {
      ScheduleConfig c = def;
      c.set("splitk", s);
      if (!(c == def) && TensorCoreConvTemplate::valid(t, c)) cfgs.push_back(c);
    }
    ScheduleConfig big({{"bm", 128},
                        {"bn", 128},
                        {"bk", 32},
                        {"wm", 64},
                        {"wn", 32},
                        {"stages", 3},
                        {"splitk", 2},
                        {"l1", 0},
                        {"epi", 0},
                        {"halo", 0},
                        {"wg", 0},
                        {"minb", 0},
                        {"pers", 0}});
    if (TensorCoreConvTemplate::valid(t, big)) cfgs.push_back(big);
    for (const ScheduleConfig& cfg : cfgs) {
      const std::string sym = fmt::format("tc_{}", m.symbols.size());
      m.add(TensorCoreConvTemplate::emit(t, cfg, sym).source, sym, cfg == def);
    }
  }
  EXPECT_EQ(TensorCoreConvTemplate::default_config(tasks[0]).get("splitk"), 4);
  EXPECT_EQ(TensorCoreConvTemplate::default_config(tasks[1]).get("splitk"), 2);
  ASSERT_GE(m.symbols.size(), 9u);
  NvrtcOptions opts;
  opts.arch = "sm_90";
  opts.extra_options = {"--ptxas-options=--verbose"};
  const CompiledModule out = nvrtc_compile(m.source, m.symbols.front(), opts);
  for (const char* ins :
       {"barrier.cluster.arrive", "barrier.cluster.wait", "mapa.shared::cluster.u32",
        "ld.shared::cluster.f32", ".reqnctapercluster 1, 1, 4", ".reqnctapercluster 1, 1, 8"}) {
    EXPECT_NE(out.ptx.find(ins), std::string::npos) << ins;
  }
  for (const std::string& sym : m.default_symbols) {
    const auto [spill, regs] = ptxas_report(out.log, sym);
    EXPECT_GE(regs, 16) << sym << ": no ptxas report in\n" << out.log;
    EXPECT_LE(spill, 16) << sym << " (default config) spills " << spill << " bytes";
  }
  opts.arch = "sm_80";
  try {
    nvrtc_compile(m.source, m.symbols.front(), opts);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("needs sm_90"), std::string::npos) << e.what();
  }
}

// Back-to-back pairs (CudaConvTask::b2b): yolov8n's, with the configs of b2b_configs for fp16
// and the defaults for bf16.
TEST(CudaNvrtc, TensorCoreB2bPairsBuild) {
  Module m;
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (const B2bLayer& l : yolov8n_b2b_layers(d, 80)) {
      const ScheduleConfig def = TensorCoreConvTemplate::default_config(l.task);
      const std::vector<ScheduleConfig> cfgs =
          d == DType::kFloat16 ? b2b_configs(l.task) : std::vector<ScheduleConfig>{def};
      for (const ScheduleConfig& cfg : cfgs) {
        const std::string sym = fmt::format("b2b_{}", m.symbols.size());
        m.add(TensorCoreConvTemplate::emit(l.task, cfg, sym).source, sym, cfg == def);
      }
    }
  }
  build_all(m, {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global"});
}

// The stem pair (stem_pair_template.h): YOLOv8's and YOLOv5's stems at 640 x 640, batch 1, with
// stem_configs for YOLOv8's in fp16 and the defaults otherwise; fp32 FMAs for the first conv,
// tensor-core tiles for the second.
TEST(CudaNvrtc, StemPairBuilds) {
  Module m;
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t k0 : {3, 6}) {
      const StemPairTask t =
          stem_task(ConvTask::make(1, 3, 640, 640, 16, k0, 2, k0 / 3, Activation::kSilu), 32, 3, 2,
                    1, Activation::kSilu, d, d, {32, 0});
      const ScheduleConfig def = StemPairTemplate::default_config(t);
      const std::vector<ScheduleConfig> cfgs =
          d == DType::kFloat16 && k0 == 3 ? stem_configs(t) : std::vector<ScheduleConfig>{def};
      for (const ScheduleConfig& cfg : cfgs) {
        const std::string sym = fmt::format("stem_{}", m.symbols.size());
        m.add(StemPairTemplate::emit(t, cfg, sym).source, sym, cfg == def);
      }
    }
  }
  build_all(m, {"fma.rn.f32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "griddepcontrol.wait"});
  // Registers: a default config's blocks fit at least two to a multiprocessor (65536 registers).
  NvrtcOptions opts;
  opts.arch = "sm_90";
  opts.extra_options = {"--ptxas-options=--verbose"};
  const CompiledModule out = nvrtc_compile(m.default_source, m.default_symbols.front(), opts);
  for (const std::string& sym : m.default_symbols) {
    const auto [spill, regs] = ptxas_report(out.log, sym);
    std::printf("%s: %d registers\n", sym.c_str(), regs);
    EXPECT_LE(regs * 256 * 2, 65536) << sym;
  }
}

TEST(CudaNvrtc, SimtTemplateBuilds) { build_all(simt_module(), {"fma.rn.f32"}); }

// FMA path: 16-byte broadcasts of the weights from shared memory, 16-byte output stores; MMA
// path: fp16 and bf16 tensor-core tiles.
TEST(CudaNvrtc, DirectTemplateBuilds) {
  build_all(direct_module(), {"fma.rn.f32", "ld.shared.v4.f32", "st.global.v4",
                              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                              "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"});
}

TEST(CudaNvrtc, DepthwiseTemplateBuilds) {
  build_all(dw_module(), {"fma.rn.f32", "ld.global.nc.v4.f32", "st.global.v4", "cvt.f32.f16",
                          "cvt.rn.bf16.f32"});
}

// The upsampled copy (a fused nearest Resize) in every template: yolov8n's two upsampled convs
// (20x20 and 40x40, into 16-byte aligned concat slices) with the tensor-core template's plain and
// staged (epi=1) epilogues, an odd slice, SIMT and direct forms, for sm_80 and sm_90 with no
// spills in the defaults; split-K copies build for sm_90.
TEST(CudaNvrtc, UpsampledCopyBuilds) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  const Activation silu = Activation::kSilu;
  Module m;
  const auto add = [&m](const CudaKernel& k, bool def) {
    m.add(k.source, k.symbol, def);
  };
  const std::vector<CudaConvTask> tc = {
      with_up(sliced(ConvTask::make(1, 256, 20, 20, 256, 1, 1, 0, silu), f16, f16, {256, 0},
                     {384, 128}, {256, 0}),
              2, 2, {384, 0}),
      with_up(CudaConvTask::dense(ConvTask::make(1, 192, 40, 40, 128, 1, 1, 0, silu), f16, f16),
              2, 2, {192, 0}),
      with_up(sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, silu, true), f16, f16, {12, 0},
                     {21, 1}, {23, 3}),
              2, 2, {25, 5})};
  for (const CudaConvTask& t : tc) {
    const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
    add(TensorCoreConvTemplate::emit(t, def, fmt::format("tc_{}", m.symbols.size())), true);
    if (TensorCoreConvTemplate::valid(t, with_l1_epi(def, 0, 1)))
      add(TensorCoreConvTemplate::emit(t, with_l1_epi(def, 0, 1),
                                       fmt::format("tc_{}", m.symbols.size())),
          false);
  }
  const CudaConvTask simt = with_up(
      CudaConvTask::dense(ConvTask::make(1, 64, 20, 20, 64, 1, 1, 0, silu), f32, f32), 2, 2,
      {96, 32});
  add(SimtConvTemplate::emit(simt, SimtConvTemplate::default_config(simt),
                             fmt::format("simt_{}", m.symbols.size())),
      true);
  for (DType dt : {f16, f32}) {  // the MMA and the FMA path
    CudaConvTask direct =
        with_up(CudaConvTask::dense(
                    ConvTask::make(1, 3, 640, 640, dt == f16 ? 16 : 32, 3, 2, 1, silu), dt, dt),
                2, 2, {64, 32});
    direct.in_nchw = true;
    add(DirectConvTemplate::emit(direct, DirectConvTemplate::default_config(direct),
                                 fmt::format("direct_{}", m.symbols.size())),
        true);
    direct.up.reset();  // the same without the copy
    add(DirectConvTemplate::emit(direct, DirectConvTemplate::default_config(direct),
                                 fmt::format("direct_{}", m.symbols.size())),
        true);
  }
  ASSERT_GE(m.symbols.size(), 7u);
  build_all(m, {"st.global.v4"});

  Module split;
  CudaConvTask t = tc[0];
  t.sm = 90;
  ScheduleConfig cfg = TensorCoreConvTemplate::default_config(t);
  cfg.set("splitk", 2);
  ASSERT_TRUE(TensorCoreConvTemplate::valid(t, cfg)) << cfg.str();
  split.source = TensorCoreConvTemplate::emit(t, cfg, "tc_split").source;
  NvrtcOptions opts;
  opts.arch = "sm_90";
  const CompiledModule out = nvrtc_compile(split.source, "tc_split", opts);
  EXPECT_NE(out.ptx.find(".reqnctapercluster 1, 1, 2"), std::string::npos);
}

TEST(CudaNvrtc, CompileErrorIsUserErrorWithLog) {
  try {
    nvrtc_compile("extern \"C\" __global__ void broken_kernel() { undeclared_thing = 1; }",
                  "broken_kernel");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("broken_kernel"), std::string::npos) << what;
    EXPECT_NE(what.find("NVRTC log"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_thing"), std::string::npos) << what;
    EXPECT_NE(what.find("sm_80"), std::string::npos) << what;
  }
}

TEST(CudaNvrtc, ArchitectureErrors) {
  EXPECT_EQ(parse_cuda_arch("sm_90a"), 90);
  EXPECT_EQ(parse_cuda_arch("sm_120"), 120);
  EXPECT_THROW(parse_cuda_arch("compute_90"), UserError);
  EXPECT_THROW(parse_cuda_arch("sm_"), UserError);
  NvrtcOptions old;
  old.arch = "sm_20";
  try {
    nvrtc_compile("extern \"C\" __global__ void k() {}", "k", old);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sm_20"), std::string::npos) << what;
    EXPECT_NE(what.find("sm_90"), std::string::npos) << what;  // in the supported list
  }
  EXPECT_FALSE(nvrtc_version().empty());
}

// SiLU before a 16-bit store takes the fast form (tanh.approx), an fp32 output the accurate one
// (expf, IEEE division).
TEST(CudaNvrtc, FastSiluBeforeSixteenBitStores) {
  const ConvTask c = ConvTask::make(1, 32, 20, 20, 32, 3, 1, 1, Activation::kSilu);
  const CudaConvTask half = CudaConvTask::dense(c, DType::kFloat16, DType::kFloat16);
  const CudaConvTask f32 = CudaConvTask::dense(c, DType::kFloat16, DType::kFloat32);
  EXPECT_STREQ(cuda_act_function(Activation::kSilu, DType::kFloat16), "yc_act_silu_fast");
  EXPECT_STREQ(cuda_act_function(Activation::kSilu, DType::kBFloat16), "yc_act_silu_fast");
  EXPECT_STREQ(cuda_act_function(Activation::kSilu, DType::kFloat32), "yc_act_silu");
  EXPECT_STREQ(cuda_act_function(Activation::kRelu, DType::kFloat16), "yc_act_relu");
  NvrtcOptions opts;
  opts.arch = "sm_90";
  for (const CudaConvTask* t : {&half, &f32}) {
    const CudaKernel k =
        TensorCoreConvTemplate::emit(*t, TensorCoreConvTemplate::default_config(*t), "k");
    const bool fast = t->out_dtype != DType::kFloat32;
    EXPECT_EQ(k.source.find("v = yc_act_silu_fast(") != std::string::npos ||
                  k.source.find("yc_act_silu_fast(v") != std::string::npos,
              fast)
        << t->key();
    const CompiledModule out = nvrtc_compile(k.source, "k", opts);
    // The fast form is one tanh.approx; the exact one expf (ex2.approx and its range
    // reduction) and an IEEE division.
    EXPECT_EQ(out.ptx.find("tanh.approx.f32") != std::string::npos, fast) << t->key();
    EXPECT_EQ(out.ptx.find("ex2.approx") == std::string::npos, fast) << t->key();
    EXPECT_EQ(out.ptx.find("div.rn.f32") == std::string::npos, fast) << t->key();
  }
}

// The epilogues read a channel pair's biases in one 8-byte load (yc_bias2), an 8-channel chunk's
// in two 16-byte loads: no bias is loaded alone, with the staged epilogue (epi 1) or without.
TEST(CudaNvrtc, BiasesInVectorLoads) {
  const ConvTask c = ConvTask::make(1, 32, 20, 20, 64, 3, 1, 1, Activation::kSilu);
  const CudaConvTask t = CudaConvTask::dense(c, DType::kFloat16, DType::kFloat16);
  NvrtcOptions opts;
  opts.arch = "sm_90";
  for (const int64_t epi : {0, 1}) {
    ScheduleConfig cfg = TensorCoreConvTemplate::default_config(t);
    cfg.set("epi", epi);
    ASSERT_TRUE(TensorCoreConvTemplate::valid(t, cfg)) << cfg.str();
    const CompiledModule out =
        nvrtc_compile(TensorCoreConvTemplate::emit(t, cfg, "k").source, "k", opts);
    EXPECT_NE(out.ptx.find(epi ? "ld.global.nc.v4.f32" : "ld.global.nc.v2.f32"), std::string::npos)
        << cfg.str();
    EXPECT_EQ(out.ptx.find("ld.global.nc.f32"), std::string::npos) << cfg.str();
  }
}

TEST(CudaNvrtc, PreludeAloneBuilds) {
  // The prelude twice (two kernels in one program) with the toolkit's headers after it.
  NvrtcOptions opts;
  opts.arch = "sm_90";
  const std::string src = cuda_prelude() + cuda_prelude() +
                          "#include <cuda_fp16.h>\n"
                          "extern \"C\" __global__ void k(__half* p) { p[0] = __float2half("
                          "yc_act_silu(yc_half_to_float(0))); }\n";
  const CompiledModule out = nvrtc_compile(src, "k", opts);
  EXPECT_NE(out.ptx.find(".entry k("), std::string::npos);
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
