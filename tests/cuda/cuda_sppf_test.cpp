// The SPPF template: which groups it takes (the SPPF of every shared model that has one, SPP's
// pools side by side, chains with uneven windows, a single pool; not pools whose windows do not
// nest or that stride), its kernels in the host emulation against the reference executor on the
// group alone (bit for bit: a max rounds nothing), over shapes (yolov8n's 20x20, odd sizes,
// images larger than a tile, batch 2, channel counts that are not a multiple of 8 or of 2),
// storage dtypes and configs, infinities, and its kernels built by NVRTC for sm_80 and sm_90.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <regex>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tasks.h"
#include "cuda_emulator.h"
#include "shared_model_util.h"
#include "sppf_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

std::unique_ptr<Graph> model(const char* file, Precision precision) {
  return shared_cuda_model(file, precision);
}

std::vector<const CudaTask*> of_template(const std::vector<CudaTask>& tasks, const char* name) {
  std::vector<const CudaTask*> out;
  for (const CudaTask& t : tasks) {
    if (t.template_name == name) out.push_back(&t);
  }
  return out;
}

// --- which groups -------------------------------------------------------------------------------

class SppfModels : public ::testing::TestWithParam<const char*> {};

// Every shared model's SPPF (YOLOX: SPP's pools side by side) is one sppf task: three 5x5 stages
// into the last three slices of its concat; no pool is left to the generic template.
TEST_P(SppfModels, TheSppfGroupTakesTheSppfTemplate) {
  const auto g = model(GetParam(), Precision::kFp16);
  if (!g) GTEST_SKIP() << "no model " << GetParam();
  const std::vector<CudaTask> tasks = extract_cuda_tasks(*g);
  const auto sppf = of_template(tasks, "sppf");
  ASSERT_EQ(sppf.size(), 1u);
  const std::string& key = sppf[0]->key;
  std::printf("[sppf] %s: %s | default %s\n", GetParam(), key.c_str(),
              sppf[0]->default_config.str().c_str());
  EXPECT_EQ(key.rfind("cuda_sppf f16 n1 ", 0), 0u) << key;
  const std::regex stages(R"( in(\d+)\+0 5x5 p2x2 out0:\1\+(\d+) 5x5 p2x2 out0:\1\+(\d+) )"
                          R"(5x5 p2x2 out0:\1\+(\d+)$)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(key, m, stages)) << key;
  const int64_t stride = std::stoll(m[1]);
  EXPECT_EQ(std::stoll(m[2]) * 4, stride);
  EXPECT_EQ(std::stoll(m[3]) * 2, stride);
  EXPECT_EQ(std::stoll(m[4]) * 4, stride * 3);
  for (const CudaTask* t : of_template(tasks, "generic")) {
    EXPECT_EQ(t->key.find("MaxPool"), std::string::npos) << t->key;
  }
  // Its kernel: x, then the concat (a pointer at the buffer both lie in).
  const CudaLowered l = sppf[0]->lower(sppf[0]->default_config, "k");
  ASSERT_EQ(l.launches.size(), 1u);
  ASSERT_EQ(l.args.size(), 2u);
  EXPECT_FALSE(l.args[0].output);
  EXPECT_TRUE(l.args[1].output);
  EXPECT_EQ(l.args[1].value->producer->op, "Concat");
}

INSTANTIATE_TEST_SUITE_P(Models, SppfModels,
                         ::testing::Values("yolov8n.onnx", "yolov5n-fp16-dynbatch.onnx",
                                           "yolo11n-dynint8-320.onnx", "yolov10n-dynint8-e2e.onnx",
                                           "yolox-nano-facemask.onnx"));

// The SPPF template's task of the only group of g it takes.
SppfTask only_task(const Graph& g) {
  std::vector<SppfTask> found;
  for (const FusedGroup& grp : g.groups) {
    if (!grp.is_kernel()) continue;
    if (auto t = sppf_task_from_group(g, grp)) found.push_back(*t);
  }
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? SppfTask{} : found[0];
}

std::string stage_str(const SppfStage& s) {
  std::string r = fmt::format("{}x{}+{}+{}", s.kh, s.kw, s.pt, s.pl);
  for (const SppfStore& st : s.stores) {
    r += fmt::format(" {}:{}+{}", st.output, st.slice.stride, st.slice.offset);
  }
  return r;
}

std::vector<std::string> stages_of(const SppfTask& t) {
  std::vector<std::string> s;
  for (const SppfStage& st : t.stages) s.push_back(stage_str(st));
  return s;
}

TEST(SppfTask, ChainsAndPoolsSideBySideBecomeIncrementalStages) {
  const auto sppf = optimized(sppf_graph(2, 16, 9, 11));
  const SppfTask a = only_task(*sppf);
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(std::vector<int64_t>({a.n, a.c, a.h, a.w}), std::vector<int64_t>({2, 16, 9, 11}));
  EXPECT_EQ(a.in, (ChannelSlice{64, 0}));
  EXPECT_EQ(stages_of(a),
            std::vector<std::string>({"5x5+2+2 0:64+16", "5x5+2+2 0:64+32", "5x5+2+2 0:64+48"}));
  EXPECT_EQ(a.halo(), (std::array<int64_t, 4>{6, 6, 6, 6}));
  EXPECT_EQ(a.key(),
            "cuda_sppf f32 n2 c16 h9 w11 in64+0 5x5 p2x2 out0:64+16 5x5 p2x2 out0:64+32 5x5 p2x2 "
            "out0:64+48");

  // SPP: 5, 9, 13 side by side on x are the same three increments.
  const auto spp = optimized(spp_graph(1, 8, 10, 10));
  EXPECT_EQ(stages_of(only_task(*spp)),
            std::vector<std::string>({"5x5+2+2 0:32+8", "5x5+2+2 0:32+16", "5x5+2+2 0:32+24"}));

  // A chain of uneven windows: (3x5 pads t0 l1 b2 r3), (2x2 pads t1 l0 b0 r1), (3x3 pads 1):
  // windows 3x5, 4x6 and 6x8.
  const auto uneven = optimized(pools_graph(
      1, 6, 7, 9, {{3, 5, {0, 1, 2, 3}, -1}, {2, 2, {1, 0, 0, 1}, 0}, {3, 3, {1, 1, 1, 1}, 1}},
      true));
  const SppfTask u = only_task(*uneven);
  EXPECT_EQ(stages_of(u),
            std::vector<std::string>({"3x5+0+1 0:24+6", "2x2+1+0 0:24+12", "3x3+1+1 0:24+18"}));
  EXPECT_EQ(u.halo(), (std::array<int64_t, 4>{2, 3, 2, 5}));

  // Windows given in decreasing order are sorted; equal ones (a 9x9 pool, two chained 5x5)
  // share a stage.
  const auto sorted = optimized(pools_graph(
      1, 4, 6, 6, {{9, 9, {4, 4, 4, 4}, -1}, {5, 5, {2, 2, 2, 2}, -1}, {5, 5, {2, 2, 2, 2}, 1}},
      true));
  EXPECT_EQ(stages_of(only_task(*sorted)),
            std::vector<std::string>({"5x5+2+2 0:16+8", "5x5+2+2 0:16+4 0:16+12"}));

  // Pools not concatenated are groups of their own (a conv reads each).
  const auto chain = optimized(
      pools_graph(1, 6, 7, 9, {{3, 5, {0, 1, 2, 3}, -1}, {2, 2, {1, 0, 0, 1}, 0}}, false));
  int pools = 0;
  for (const FusedGroup& grp : chain->groups) {
    if (!grp.is_kernel()) continue;
    if (auto t = sppf_task_from_group(*chain, grp)) {
      ++pools;
      ASSERT_EQ(t->stages.size(), 1u);
      EXPECT_EQ(t->outputs.size(), 1u);
      EXPECT_EQ(t->out_slices[0], (ChannelSlice{6, 0}));
    }
  }
  EXPECT_EQ(pools, 2);

  // A single same-size pool.
  const auto single = optimized(pools_graph(1, 3, 5, 5, {{3, 3, {1, 1, 1, 1}, -1}}, false));
  EXPECT_EQ(stages_of(only_task(*single)), std::vector<std::string>({"3x3+1+1 0:3+0"}));
}

TEST(SppfTask, OtherPoolsAreLeftToTheGenericTemplate) {
  std::vector<std::string> why;
  const auto refused = [&why](const Graph& g) {
    for (const FusedGroup& grp : g.groups) {
      if (!grp.is_kernel()) continue;
      std::string w;
      if (sppf_task_from_group(g, grp, &w)) return false;
      why.push_back(w);
    }
    bool generic_pool = false;
    for (const CudaTask& t : extract_cuda_tasks(g)) {
      generic_pool = generic_pool ||
                     (t.template_name == "generic" && t.key.find("MaxPool") != std::string::npos);
    }
    return generic_pool;
  };
  const auto gave = [&why](const std::string& reason) {
    return std::any_of(why.begin(), why.end(),
                       [&](const std::string& w) { return w.find(reason) != std::string::npos; });
  };
  // An SPP whose windows do not nest: one reaching up, one down.
  EXPECT_TRUE(refused(*optimized(pools_graph(
      1, 4, 8, 8, {{3, 3, {2, 1, 0, 1}, -1}, {3, 3, {0, 1, 2, 1}, -1}, {5, 5, {2, 2, 2, 2}, -1}},
      true))));
  EXPECT_TRUE(gave("windows not nested"));
  // A strided pool.
  auto g = std::make_unique<Graph>();
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  Value* x = conv(*g, input(*g, "x", {1, 8, 8, 8}), 8, 8, 1, 1);
  g->outputs = {conv(*g, node(*g, "MaxPool", {x}, a), 8, 4, 1, 2)};
  EXPECT_TRUE(refused(*optimized(std::move(g))));
  EXPECT_TRUE(gave("not a stride-1 same-size MaxPool"));
  // A same-size pool with an activation fused after it.
  auto r = std::make_unique<Graph>();
  Attrs p;
  p.set("kernel_shape", std::vector<int64_t>{3, 3});
  p.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Value* y = conv(*r, input(*r, "x", {1, 8, 8, 8}), 8, 8, 1, 1);
  r->outputs = {conv(*r, node(*r, "Relu", {node(*r, "MaxPool", {y}, p)}), 8, 4, 1, 2)};
  EXPECT_TRUE(refused(*optimized(std::move(r))));
}

// --- emulated kernels ---------------------------------------------------------------------------

// Emits every case with its default config and each of `extra` that is valid for it, builds all
// in one shared object, runs them on random operands (or `values`) and compares with the
// reference bit for bit.
void run(const std::vector<SppfCase>& cases, const std::vector<ScheduleConfig>& extra = {},
         const std::vector<Tensor>* values = nullptr) {
  ASSERT_FALSE(cases.empty());
  struct Run {
    const SppfCase* c;
    ScheduleConfig cfg;
    CudaKernel k;
  };
  std::vector<Run> runs;
  std::vector<CudaKernel> kernels;
  for (const SppfCase& c : cases) {
    ASSERT_TRUE(SppfTemplate::matches(c.task)) << c.group.what;
    std::vector<ScheduleConfig> cfgs = {SppfTemplate::default_config(c.task)};
    for (const ScheduleConfig& cfg : extra) {
      if (SppfTemplate::valid(c.task, cfg) && !(cfg == cfgs[0])) cfgs.push_back(cfg);
    }
    for (const ScheduleConfig& cfg : cfgs) {
      CudaKernel k = SppfTemplate::emit(c.task, cfg, fmt::format("s{}", runs.size()));
      kernels.push_back(k);
      runs.push_back({&c, cfg, std::move(k)});
    }
  }
  const EmulatedKernels emu(kernels);
  int64_t threads = 0;
  for (const CudaKernel& k : kernels) threads += int64_t{k.grid[0]} * k.block[0];
  std::printf("[emulated] %zu runs, %lld threads\n", runs.size(), static_cast<long long>(threads));
  uint32_t seed = 3;
  for (const Run& r : runs) {
    const SppfCase& c = *r.c;
    SCOPED_TRACE(c.group.what + " | " + r.cfg.str());
    CaseData d = make_data(c.group, seed += 10, values);
    std::vector<EmulatedKernels::Buffer> args = {{d.inputs[0].data(), d.inputs[0].size()}};
    for (std::vector<uint8_t>& o : d.outputs) args.push_back({o.data(), o.size()});
    EXPECT_EQ(emu.launch(r.k, args), "");
    EXPECT_TRUE(check_outputs(c.group, d, d.outputs, true));
  }
}

std::vector<SppfCase> cases_of(const Graph& g, const std::string& what,
                               std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16}) {
  std::vector<SppfCase> out;
  for (DType t : dtypes) {
    for (SppfCase& c : sppf_cases(g, t, what)) out.push_back(std::move(c));
  }
  EXPECT_EQ(out.size(), dtypes.size()) << what;
  return out;
}

ScheduleConfig config(int64_t channels, int64_t tile, int64_t threads) {
  return ScheduleConfig({{"channels", channels}, {"tile", tile}, {"threads", threads}});
}

TEST(SppfEmulated, Yolov8Shape20x20AllDtypesAndConfigs) {
  const auto g = optimized(sppf_graph(1, 16, 20, 20));
  const auto cases =
      cases_of(*g, "sppf 20x20", {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  // The default: the whole image, no halo, 8 channels a block.
  const ScheduleConfig def = SppfTemplate::default_config(cases[1].task);
  EXPECT_EQ(def.get("channels"), 8);
  EXPECT_GE(def.get("tile"), 20);
  // Tiles of 8 and 16 (3x3 and 2x2 tiles with halos), 4 / 16 channels, threads that do not
  // divide the lines.
  run(cases, {config(4, 8, 64), config(16, 16, 128), config(8, 32, 384)});
}

TEST(SppfEmulated, OddSizesAndChannelCounts) {
  const auto a = optimized(sppf_graph(1, 12, 13, 17));  // 12 channels: 4-element vectors
  const auto b = optimized(sppf_graph(2, 20, 9, 11));   // batch 2, a chunk of 4 of 8
  const auto c = optimized(sppf_graph(2, 5, 7, 6));     // 5 channels: scalar accesses
  std::vector<SppfCase> cases = cases_of(*a, "13x17 c12");
  for (SppfCase& x : cases_of(*b, "n2 9x11 c20")) cases.push_back(std::move(x));
  for (SppfCase& x : cases_of(*c, "n2 7x6 c5", {DType::kFloat16, DType::kBFloat16})) {
    cases.push_back(std::move(x));
  }
  run(cases, {config(4, 8, 64), config(16, 8, 192)});
}

TEST(SppfEmulated, ImagesLargerThanATile) {
  // 70 rows cannot be one tile (a line is at most 64): tiles of 32 or 16 with halos of 6.
  const auto g = optimized(sppf_graph(1, 8, 70, 45));
  const auto cases = cases_of(*g, "70x45", {DType::kFloat16});
  const ScheduleConfig def = SppfTemplate::default_config(cases[0].task);
  EXPECT_LT(def.get("tile"), 70);
  EXPECT_FALSE(SppfTemplate::valid(cases[0].task, config(8, 64, 256)));
  run(cases, {config(8, 16, 128)});
}

TEST(SppfEmulated, SppUnevenChainsAndSinglePools) {
  const auto spp = optimized(spp_graph(1, 8, 15, 12));
  const auto uneven = optimized(pools_graph(
      2, 6, 11, 9, {{3, 5, {0, 1, 2, 3}, -1}, {2, 2, {1, 0, 0, 1}, 0}, {3, 3, {1, 1, 1, 1}, 1}},
      true));
  const auto single = optimized(pools_graph(1, 16, 10, 7, {{3, 3, {1, 1, 1, 1}, -1}}, false));
  // Side by side, given largest first, a window twice.
  const auto sorted = optimized(pools_graph(
      1, 4, 9, 8, {{9, 9, {4, 4, 4, 4}, -1}, {5, 5, {2, 2, 2, 2}, -1}, {5, 5, {2, 2, 2, 2}, 1}},
      true));
  std::vector<SppfCase> cases = cases_of(*spp, "spp");
  for (SppfCase& x : cases_of(*uneven, "uneven chain")) cases.push_back(std::move(x));
  for (SppfCase& x : cases_of(*single, "single 3x3")) cases.push_back(std::move(x));
  for (SppfCase& x : cases_of(*sorted, "9 and 5")) cases.push_back(std::move(x));
  run(cases, {config(4, 8, 64)});
}

TEST(SppfEmulated, InfinitiesAsTheReferenceHasThem) {
  // Channel 0 all -inf (every output -inf, as ONNX's -inf padding gives: not the lowest float);
  // channel 1 -inf in a 10x10 corner (the 5x5 and 9x9 windows inside it stay -inf); channel 2 a
  // +inf pixel that spreads; the others random with -inf rows.
  const int64_t c = 8, h = 20, w = 20;
  const auto g = optimized(sppf_graph(1, c, h, w));
  Tensor x = yoloc::testing::random_tensor({1, c, h, w}, 17, -2.f, 2.f);
  float* p = x.data<float>();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        float& v = p[(ch * h + i) * w + j];
        if (ch == 0 || (ch == 1 && i < 10 && j < 10) || (ch > 2 && i % 7 == 3)) v = -inf;
        if (ch == 2 && i == 11 && j == 4) v = inf;
      }
  const std::vector<Tensor> values = {x};
  run(cases_of(*g, "infinities", {DType::kFloat32, DType::kFloat16, DType::kBFloat16}),
      {config(4, 8, 64)}, &values);
}

// --- NVRTC --------------------------------------------------------------------------------------

// ptxas' report (--verbose) of one kernel: spill store bytes and registers, {-1, -1} if absent.
std::pair<int, int> ptxas_report(const std::string& log, const std::string& sym) {
  const std::regex re("Function properties for " + sym +
                      "\\n[^\\n]*?\\d+ bytes stack frame, (\\d+) bytes spill stores[^\\n]*\\n"
                      "[^\\n]*?Used (\\d+) registers");
  std::smatch m;
  if (!std::regex_search(log, m, re)) return {-1, -1};
  return {std::stoi(m[1].str()), std::stoi(m[2].str())};
}

// Configs of yolov8n's SPPF (fp16), the defaults of the other shapes and dtypes:
// they build for sm_80 and sm_90, the yolov8n kernel with 16-byte loads and stores, and no
// default spills.
TEST(SppfNvrtc, KernelsBuild) {
  const auto v8 = optimized(sppf_graph(1, 128, 20, 20));
  const auto big = optimized(sppf_graph(2, 64, 70, 45));
  const auto odd = optimized(sppf_graph(1, 5, 13, 17));
  const auto spp = optimized(spp_graph(1, 12, 10, 10));
  std::string source;
  std::vector<std::string> symbols, defaults;
  const auto add = [&](const SppfTask& t, const ScheduleConfig& cfg) {
    const std::string sym = fmt::format("sppf_{}", symbols.size());
    source += SppfTemplate::emit(t, cfg, sym).source;
    symbols.push_back(sym);
    if (cfg == SppfTemplate::default_config(t)) defaults.push_back(sym);
  };
  SppfTask yolo = only_task(*v8);
  yolo.dtype = DType::kFloat16;
  // Every blocking at 256 threads, every thread count at the default blocking.
  const ScheduleSpace space = SppfTemplate::space(yolo);
  const ScheduleConfig def = SppfTemplate::default_config(yolo);
  for (int64_t cb : space.find("channels")->domain)
    for (int64_t tile : space.find("tile")->domain)
      for (int64_t threads : space.find("threads")->domain) {
        const ScheduleConfig cfg = config(cb, tile, threads);
        const bool sweep = threads == 256 || (cb == def.get("channels") && tile == def.get("tile"));
        if (sweep && SppfTemplate::valid(yolo, cfg)) add(yolo, cfg);
      }
  EXPECT_GE(symbols.size(), 15u);
  for (const Graph* g : {v8.get(), big.get(), odd.get(), spp.get()}) {
    for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      SppfTask t = only_task(*g);
      t.dtype = d;
      add(t, SppfTemplate::default_config(t));
    }
  }
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    NvrtcOptions opts;
    opts.arch = arch;
    opts.extra_options = {"--ptxas-options=--verbose"};
    const CompiledModule out = nvrtc_compile(source, symbols.front(), opts);
    EXPECT_EQ(out.cubin.compare(0, 4,
                                "\x7f"
                                "ELF"),
              0);
    for (const std::string& sym : symbols) {
      EXPECT_NE(out.ptx.find(".entry " + sym + "("), std::string::npos) << sym;
    }
    EXPECT_NE(out.ptx.find("ld.global.nc.v4.u32"), std::string::npos);
    EXPECT_NE(out.ptx.find("st.global.v4.u32"), std::string::npos);
    for (const std::string& sym : defaults) {
      const auto [spill, regs] = ptxas_report(out.log, sym);
      EXPECT_GE(regs, 8) << sym << ": no ptxas report in\n" << out.log;
      EXPECT_EQ(spill, 0) << sym << " (default config) spills " << spill << " bytes";
    }
  }
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
