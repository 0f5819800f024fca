// The detect-tail template: which tail groups it takes (yolov8n's and yolo11n's, the synthetic
// forms of detect_tail_test_util.h; not yolov5n's, YOLOX's, yolov10n's end-to-end tail, nor a
// softmax over the sides), what it reads from the graph (DFL weights, anchors, strides), its
// kernel in the host emulation against the reference executor on the group alone (yolov8n and
// yolo11n at batch 1 and 2, fp32 / fp16 / bf16 storage, NHWC head outputs, configs), and its
// kernels built by NVRTC for sm_80 and sm_90.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tasks.h"
#include "cuda_emulator.h"
#include "detect_tail_test_util.h"
#include "shared_model_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

std::unique_ptr<Graph> model(const char* file, Precision precision, int64_t batch = 1) {
  return shared_cuda_model(file, precision, batch);
}

// The template of the task of g's detect_tail group.
std::string tail_template(const Graph& g, std::string* key = nullptr) {
  for (const CudaTask& t : extract_cuda_tasks(g)) {
    if (t.group_name != "detect_tail") continue;
    if (key) *key = t.key;
    return t.template_name;
  }
  return "";
}

// --- which groups -------------------------------------------------------------------------------

class TailModels : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

// The DFL tails of yolov8n and yolo11n take the template, one launch with the head outputs, the
// table and the output; the other tails stay generic.
TEST_P(TailModels, TemplateOfTheTail) {
  const auto [file, want] = GetParam();
  const auto g = model(file, Precision::kFp16);
  if (!g) GTEST_SKIP() << "no model " << file;
  std::string key;
  EXPECT_EQ(tail_template(*g, &key), want) << key;
  std::printf("[tail] %s: %s\n", file, key.substr(0, 400).c_str());
  if (std::string(want) != "detect_tail") return;
  for (const CudaTask& t : extract_cuda_tasks(*g)) {
    if (t.template_name != "detect_tail") continue;
    const CudaLowered l = t.lower(t.default_config, "k");
    ASSERT_EQ(l.launches.size(), 1u);
    ASSERT_EQ(l.args.size(), 8u);  // six head outputs, the table, the output
    // At fp16 the class convs store the scores into the output (CudaConvTask::scores): the
    // tail reads the box maps only, its class inputs are null. Not where the head convs write
    // into one concat per level (the dynamic-shape model): the class maps are slices of it.
    const bool stored = std::string(file) != "yolov8n-dynint8-dynshape.onnx";
    EXPECT_EQ(t.key.find(" cls-stored") != std::string::npos, stored) << t.key;
    int nulls = 0;
    for (size_t i = 0; i < 6; ++i) {
      nulls += l.args[i].kind == CudaArg::Kind::kNull;
      if (l.args[i].kind != CudaArg::Kind::kNull) {
        EXPECT_EQ(l.args[i].kind, CudaArg::Kind::kActivation);
      }
    }
    EXPECT_EQ(nulls, stored ? 3 : 0);
    EXPECT_EQ(l.args[6].kind, CudaArg::Kind::kConstant);
    EXPECT_TRUE(l.args[7].output);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shared, TailModels,
    ::testing::Values(std::pair{"yolov8n.onnx", "detect_tail"},
                      std::pair{"yolov8n-dynint8.onnx", "detect_tail"},
                      std::pair{"yolov8n-dynint8-dynshape.onnx", "detect_tail"},
                      std::pair{"yolo11n-dynint8-320.onnx", "detect_tail"},
                      std::pair{"yolov10n-dynint8-e2e.onnx", "generic"},
                      std::pair{"yolov5n-fp16-dynbatch.onnx", "generic"},
                      std::pair{"yolox-nano-facemask.onnx", "generic"}),
    [](const auto& info) {
      std::string s = info.param.first;
      for (char& c : s) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return s;
    });

DetectTailTask only_task(const Graph& g) {
  const auto cases = detect_tail_cases(g, DType::kFloat32, "tail");
  EXPECT_EQ(cases.size(), 1u);
  return cases.empty() ? DetectTailTask{} : cases[0].task;
}

TEST(DetectTailTask, ReadsWeightsAnchorsAndStridesFromTheGraph) {
  // 320 x 320: 40x40, 20x20, 10x10 levels.
  const auto g = optimized(dfl_tail_graph({.size = 320, .nc = 3}));
  const DetectTailTask t = only_task(*g);
  EXPECT_EQ(t.n, 1);
  EXPECT_EQ(t.anchors, 2100);
  EXPECT_EQ(t.sides, 4);
  EXPECT_EQ(t.bins, 16);
  EXPECT_EQ(t.classes, 3);
  ASSERT_EQ(t.levels.size(), 3u);
  EXPECT_EQ(t.levels[1].first, 1600);
  EXPECT_EQ(t.levels[2].h, 10);
  ASSERT_EQ(t.dfl_weights.size(), 16u);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(t.dfl_weights[static_cast<size_t>(r)], r);
  EXPECT_EQ(t.dfl_bias, 0.f);
  // Anchor x, anchor y, stride: anchor 1600 is (0.5, 0.5) at stride 16; the last is (9.5, 9.5)
  // at stride 32.
  ASSERT_EQ(t.table.size(), 3u * 2100);
  EXPECT_EQ(t.table[1], 1.5f);
  EXPECT_EQ(t.table[1600], 0.5f);
  EXPECT_EQ(t.table[2100 + 2099], 9.5f);
  EXPECT_EQ(t.table[2 * 2100 + 1600], 16.f);
  EXPECT_EQ(t.table[2 * 2100 + 2099], 32.f);
  EXPECT_EQ(t.box_out.size(), 4u);
  EXPECT_EQ(t.class_offset, 4);

  // Other weights and a bias are read; YOLO11's softmax form and the Split of one head conv per
  // level are the same tail; xyxy decodes without the centre.
  const auto r = optimized(dfl_tail_graph(
      {.size = 128, .nc = 5, .v11_softmax = true, .split_heads = true, .xyxy = true,
       .random_dfl = true}));
  const DetectTailTask u = only_task(*r);
  EXPECT_EQ(u.dfl_bias, 0.25f);
  EXPECT_NE(u.dfl_weights[1], 1.f);
  EXPECT_EQ(u.levels[0].box_input, u.levels[0].cls_input);
  EXPECT_EQ(u.levels[0].cls_channel, 64);
  // x1 = ax - d0, y1 = ay - d1, x2 = ax + d2, y2 = ay + d3, times the stride.
  EXPECT_NE(u.key().find("decode t0=T0-d0 t1=T1-d1 t2=T0+d2 t3=T1+d3 t4=t0*T2 t5=t1*T2 "
                         "t6=t2*T2 t7=t3*T2 out t4 t5 t6 t7"),
            std::string::npos)
      << u.key();
}

TEST(DetectTailTask, OtherTailsStayGeneric) {
  // A softmax over the sides is no DFL.
  EXPECT_EQ(tail_template(*optimized(dfl_tail_graph({.size = 64, .nc = 2, .softmax_on_sides = true}))),
            "generic");
  // The synthetic v10 end-to-end tail (a selection after the decode).
  EXPECT_EQ(tail_template(*optimized(yolov10_tail_graph(64, 3, 10))), "generic");
  // And the matching tail takes the template (the control).
  EXPECT_EQ(tail_template(*optimized(dfl_tail_graph({.size = 64, .nc = 2}))), "detect_tail");
  std::string why;
  const auto g = optimized(dfl_tail_graph({.size = 64, .nc = 2, .softmax_on_sides = true}));
  for (const FusedGroup& grp : g->groups) {
    if (grp.kind != GroupKind::kDetectTail) continue;
    EXPECT_FALSE(detect_tail_task_from_group(
        *g, grp, [&](const Value* v) { return cuda_operand_of(*g, v); }, &why));
  }
  EXPECT_NE(why.find("softmax over other than the bins"), std::string::npos) << why;
}

// --- emulated kernels ---------------------------------------------------------------------------

// Emits every case with its default config and each of `extra` valid for it, builds them in one
// shared object, runs them on random operands and compares with the reference.
void run(const std::vector<DetectTailCase>& cases, const std::vector<ScheduleConfig>& extra = {}) {
  ASSERT_FALSE(cases.empty());
  struct Run {
    const DetectTailCase* c;
    ScheduleConfig cfg;
    CudaKernel k;
  };
  std::vector<Run> runs;
  GenericKernels all;
  for (const DetectTailCase& c : cases) {
    ASSERT_TRUE(DetectTailTemplate::matches(c.task)) << c.group.what;
    std::vector<ScheduleConfig> cfgs = {DetectTailTemplate::default_config(c.task)};
    for (const ScheduleConfig& cfg : extra) {
      if (DetectTailTemplate::valid(c.task, cfg) && !(cfg == cfgs[0])) cfgs.push_back(cfg);
    }
    for (const ScheduleConfig& cfg : cfgs) {
      CudaKernel k = DetectTailTemplate::emit(c.task, cfg, fmt::format("dt{}", runs.size()));
      all.source += k.source;
      all.launches.push_back(k);
      runs.push_back({&c, cfg, std::move(k)});
    }
  }
  const EmulatedGenericKernels emu(all);
  uint32_t seed = 7;
  for (const Run& r : runs) {
    const DetectTailCase& c = *r.c;
    SCOPED_TRACE(c.group.what + " | " + r.cfg.str());
    CaseData d = make_data(c.group, seed += 10);
    std::vector<float> table;
    const std::vector<void*> args = detect_tail_args(c, d, table);
    ASSERT_FALSE(args.empty());
    EXPECT_EQ(emu.launch(r.k, args), "");
    EXPECT_TRUE(check_outputs(c.group, d, d.outputs));
  }
  std::printf("[emulated] %zu runs\n", runs.size());
}

std::vector<DetectTailCase> cases_of(const Graph& g, const std::string& what,
                                     std::vector<DType> dtypes, bool nhwc = false) {
  std::vector<DetectTailCase> out;
  for (DType t : dtypes) {
    for (DetectTailCase& c : detect_tail_cases(g, t, what, nhwc)) out.push_back(std::move(c));
  }
  EXPECT_EQ(out.size(), dtypes.size()) << what;
  return out;
}

ScheduleConfig config(int64_t threads, int64_t chunk) {
  return ScheduleConfig({{"threads", threads}, {"class_chunk", chunk}});
}

TEST(DetectTailEmulated, SyntheticFormsDtypesAndConfigs) {
  const auto v8 = optimized(dfl_tail_graph({.size = 128, .nc = 7}));
  const auto v11 = optimized(dfl_tail_graph(
      {.n = 2, .size = 96, .nc = 20, .v11_softmax = true, .split_heads = true}));
  const auto xyxy = optimized(dfl_tail_graph({.size = 64, .nc = 3, .xyxy = true, .random_dfl = true}));
  auto cases = cases_of(*v8, "v8 128", {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  for (auto& c : cases_of(*v11, "v11 n2 96", {DType::kFloat32, DType::kFloat16})) cases.push_back(c);
  for (auto& c : cases_of(*xyxy, "xyxy 64", {DType::kFloat32})) cases.push_back(c);
  run(cases, {config(64, 8), config(128, 32), config(512, 128)});
}

TEST(DetectTailEmulated, NhwcHeadOutputs) {
  const auto g = optimized(dfl_tail_graph({.n = 2, .size = 64, .nc = 5, .split_heads = true}));
  const auto cases = cases_of(*g, "v8 nhwc", {DType::kFloat32, DType::kFloat16}, true);
  for (const DetectTailCase& c : cases) EXPECT_EQ(c.task.inputs[0].strides[1], 1) << c.group.what;
  run(cases, {config(128, 16)});
}

// The real tails: yolov8n (batch 1, fp32 and fp16 storage), yolov8n at batch 2 (the
// dynamic-shape model, whose head convs write into one view Concat per level), yolo11n at 320.
TEST(DetectTailEmulated, ModelTails) {
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<DetectTailCase> cases;
  const auto add = [&](const char* file, int64_t batch, DType dtype) {
    auto g = model(file, Precision::kFp32, batch);
    if (!g) return;
    for (DetectTailCase& c : detect_tail_cases(*g, dtype, fmt::format("{} n{}", file, batch))) {
      EXPECT_EQ(c.task.n, batch);
      cases.push_back(std::move(c));
    }
    graphs.push_back(std::move(g));
  };
  // The graphs at fp32 numerics (the reference executor runs the group alone on its IR
  // types), the operands stored as given.
  add("yolov8n.onnx", 1, DType::kFloat32);
  add("yolov8n.onnx", 1, DType::kFloat16);
  add("yolov8n-dynint8-dynshape.onnx", 2, DType::kFloat16);
  add("yolo11n-dynint8-320.onnx", 1, DType::kFloat32);
  add("yolo11n-dynint8-320.onnx", 1, DType::kBFloat16);
  if (graphs.empty()) GTEST_SKIP() << "no shared models";
  EXPECT_EQ(cases.size(), graphs.size());
  for (const DetectTailCase& c : cases) {
    EXPECT_EQ(c.task.sides, 4);
    EXPECT_EQ(c.task.bins, 16);
    EXPECT_EQ(c.task.classes, 80);
    EXPECT_EQ(c.task.box_out.size(), 4u);
    for (int r = 0; r < 16; ++r) EXPECT_EQ(c.task.dfl_weights[static_cast<size_t>(r)], r);
  }
  run(cases);
}

// --- NVRTC --------------------------------------------------------------------------------------

TEST(DetectTailNvrtc, KernelsBuild) {
  const auto v8 = optimized(dfl_tail_graph({.size = 640, .nc = 80}));
  const auto v11 = optimized(dfl_tail_graph(
      {.n = 2, .size = 320, .nc = 80, .v11_softmax = true, .split_heads = true, .xyxy = true,
       .random_dfl = true}));
  std::string source;
  std::vector<std::string> symbols;
  for (const Graph* g : {v8.get(), v11.get()}) {
    for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (const DetectTailCase& c : detect_tail_cases(*g, d, "nvrtc")) {
        std::vector<ScheduleConfig> cfgs = {DetectTailTemplate::default_config(c.task)};
        if (d == DType::kFloat16) cfgs.push_back(config(512, 128));
        for (const ScheduleConfig& cfg : cfgs) {
          const std::string sym = fmt::format("dt_{}", symbols.size());
          source += DetectTailTemplate::emit(c.task, cfg, sym).source;
          symbols.push_back(sym);
        }
      }
    }
  }
  ASSERT_EQ(symbols.size(), 8u);
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    NvrtcOptions opts;
    opts.arch = arch;
    const CompiledModule out = nvrtc_compile(source, symbols.front(), opts);
    for (const std::string& sym : symbols) {
      EXPECT_NE(out.ptx.find(".entry " + sym + "("), std::string::npos) << sym;
    }
  }
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
