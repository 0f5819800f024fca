// The generic CUDA template's kernels run in the host emulation (cuda_emulator.h) against the
// reference executor on each group alone: depthwise and grouped convs (NHWC, fp32 / fp16 / bf16
// storage, stride 2, batch 2), SPPF's max-pool chain written into the slices of its concat,
// a nearest Resize written into a concat slice, an attention block (MatMul, Softmax,
// Transposes), a synthetic yolov8 detect tail, selections with int64 index arithmetic (TopK
// with ties, NaN and K = n, ReduceMax, Tile, Gather, GatherElements, Div / Mod / Cast), a
// synthetic YOLOv10 end-to-end tail, and every group the conv templates leave in yolov8n,
// yolox-nano, yolo11n and yolov10n.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cuda_emulator.h"
#include "frontend/onnx/importer.h"
#include "generic_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

// Emits every case (default config, and `extra` configs), builds all in one shared object, runs
// them on random operands and compares with the reference.
void run(const std::vector<GroupCase>& cases, const std::vector<ScheduleConfig>& extra = {}) {
  ASSERT_FALSE(cases.empty());
  struct Run {
    const GroupCase* c;
    ScheduleConfig cfg;
    GenericKernels k;
  };
  std::vector<Run> runs;
  GenericKernels all;
  for (const GroupCase& c : cases) {
    std::vector<ScheduleConfig> cfgs = {GenericTemplate::default_config(c.task)};
    cfgs.insert(cfgs.end(), extra.begin(), extra.end());
    for (const ScheduleConfig& cfg : cfgs) {
      ASSERT_TRUE(GenericTemplate::valid(c.task, cfg)) << cfg.str();
      GenericKernels k = GenericTemplate::emit(c.task, cfg, fmt::format("k{}", runs.size()));
      all.source += k.source;
      all.launches.insert(all.launches.end(), k.launches.begin(), k.launches.end());
      runs.push_back({&c, cfg, std::move(k)});
    }
  }
  const EmulatedGenericKernels emu(all);
  int64_t threads = 0;
  for (const CudaKernel& l : all.launches) threads += int64_t{l.grid[0]} * l.block[0];
  std::printf("[emulated] %zu cases, %zu launches, %lld threads\n", runs.size(),
              all.launches.size(), static_cast<long long>(threads));
  uint32_t seed = 5;
  for (const Run& r : runs) {
    const GroupCase& c = *r.c;
    SCOPED_TRACE(c.what + " | " + r.cfg.str() + " | " + c.task.key().substr(0, 300));
    CaseData d = make_data(c, seed += 10);
    std::vector<float> scratch(r.k.scratch_bytes / 4, std::nanf(""));
    std::vector<void*> args;
    for (size_t k = 0; k < d.inputs.size(); ++k) {
      args.push_back(d.inputs[k].data() + c.in_offset[k] * dtype_size(c.task.inputs[k].dtype));
    }
    for (Tensor& t : d.constants) args.push_back(t.raw());
    for (size_t k = 0; k < d.outputs.size(); ++k) {
      args.push_back(d.outputs[k].data() + c.out_offset[k] * dtype_size(c.task.outputs[k].dtype));
    }
    args.push_back(scratch.data());
    for (const CudaKernel& l : r.k.launches) EXPECT_EQ(emu.launch(l, args), "") << l.symbol;
    EXPECT_TRUE(check_outputs(c, d, d.outputs));
  }
}

std::vector<GroupCase> cases_of(const Graph& g, const std::string& what,
                                std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16}) {
  std::vector<GroupCase> out;
  for (DType t : dtypes) {
    for (GroupCase& c : generic_cases(g, t, what)) out.push_back(std::move(c));
  }
  return out;
}

TEST(CudaGenericEmulated, DepthwiseAndGroupedConvNhwc) {
  const auto g1 = optimized(depthwise_graph(1, 32, 13, 11, 1));
  const auto g2 = optimized(depthwise_graph(2, 16, 12, 9, 2));
  auto cases = cases_of(*g1, "dw s1", {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  for (GroupCase& c : cases_of(*g2, "dw s2 n2")) cases.push_back(std::move(c));
  // The depthwise conv with its SiLU, and the grouped conv, each one launch.
  ASSERT_EQ(cases.size(), 10u);
  for (const GroupCase& c : cases) {
    EXPECT_EQ(GenericTemplate::emit(c.task, GenericTemplate::default_config(c.task), "k")
                  .launches.size(),
              1u)
        << c.what;
    EXPECT_EQ(c.task.inputs[0].strides[1], 1) << "NHWC input expected: " << c.what;
  }
  run(cases, {ScheduleConfig({{"threads", 64}, {"items", 4}})});
}

TEST(CudaGenericEmulated, SppfPoolChainIntoConcatSlices) {
  const auto g1 = optimized(sppf_graph(1, 16, 9, 11));
  const auto g2 = optimized(sppf_graph(2, 8, 7, 6));
  auto cases = cases_of(*g1, "sppf");
  for (GroupCase& c : cases_of(*g2, "sppf n2")) cases.push_back(std::move(c));
  ASSERT_EQ(cases.size(), 4u);
  for (const GroupCase& c : cases) {
    // Three pools into the last three slices of the concat (its first slice is the input,
    // in place), in one launch.
    ASSERT_EQ(c.task.outputs.size(), 1u) << c.what;
    ASSERT_EQ(c.task.inputs.size(), 1u) << c.what;
    const int64_t ch = c.task.inputs[0].value->type.dims[1].value;
    EXPECT_EQ(c.task.outputs[0].strides[3], 4 * ch) << c.what;
    EXPECT_EQ(c.task.inputs[0].strides[3], 4 * ch) << c.what;
    EXPECT_EQ(GenericTemplate::emit(c.task, GenericTemplate::default_config(c.task), "k")
                  .launches.size(),
              1u);
  }
  run(cases, {ScheduleConfig({{"threads", 128}, {"items", 2}})});
}

TEST(CudaGenericEmulated, NearestResizeIntoConcatSlice) {
  const auto g1 = optimized(resize_concat_graph(1, 24, 5, 7));
  const auto g2 = optimized(resize_concat_graph(2, 8, 4, 3));
  auto cases = cases_of(*g1, "resize");
  for (GroupCase& c : cases_of(*g2, "resize n2")) cases.push_back(std::move(c));
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].task.outputs[0].strides[3], 24 + 16);
  run(cases);
}

TEST(CudaGenericEmulated, AttentionMatMulSoftmaxTransposes) {
  const auto g = optimized(attention_graph(32, 5, 6));
  run(cases_of(*g, "attention"), {ScheduleConfig({{"threads", 64}, {"items", 2}})});
}

TEST(CudaGenericEmulated, SyntheticYolov8DetectTail) {
  const auto g = optimized(yolov8_tail_graph(128, 6));
  const auto cases = cases_of(*g, "yolov8 tail", {DType::kFloat32, DType::kFloat16});
  ASSERT_FALSE(cases.empty());
  for (const GroupCase& c : cases) {
    if (c.task.nodes.size() < 10) continue;  // the tail: the Softmax, then everything else
    EXPECT_LE(GenericTemplate::emit(c.task, GenericTemplate::default_config(c.task), "k")
                  .launches.size(),
              2u);
  }
  run(cases);
}

// TopK's order (ties to the lower index, NaN largest, smallest first) and the int64 index
// arithmetic around it, each group against the reference.
TEST(CudaGenericEmulated, TopKGatherAndInt64IndexArithmetic) {
  struct Select {
    const char* what;
    int64_t k;
    SelectInput f;
    bool largest;
  };
  const std::vector<Select> selects = {
      {"plain k7", 7, SelectInput::kPlain, true},
      {"ties k12", 12, SelectInput::kTies, true},
      {"ties smallest k12", 12, SelectInput::kTies, false},
      {"NaN k9", 9, SelectInput::kNaN, true},
      {"NaN smallest k9", 9, SelectInput::kNaN, false},
      {"k = n", 30, SelectInput::kPlain, true},
      {"ties k = n", 30, SelectInput::kTies, true},
  };
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<GroupCase> cases;
  for (const Select& s : selects) {
    graphs.push_back(optimized(select_graph(3, 5, 6, s.k, s.f, s.largest)));
    for (GroupCase& c : cases_of(*graphs.back(), s.what, {DType::kFloat32})) {
      cases.push_back(std::move(c));
    }
  }
  // One generic group per graph (the conv is the conv template's).
  ASSERT_EQ(cases.size(), selects.size());
  for (const GroupCase& c : cases) {
    // ReduceMax, TopK, then the selection: three launches.
    EXPECT_EQ(GenericTemplate::emit(c.task, GenericTemplate::default_config(c.task), "k")
                  .launches.size(),
              3u)
        << c.what;
  }
  run(cases, {ScheduleConfig({{"threads", 64}, {"items", 4}})});
}

TEST(CudaGenericEmulated, SyntheticYolov10EndToEndTail) {
  const auto g = optimized(yolov10_tail_graph(128, 6, 20));
  const auto cases = cases_of(*g, "yolov10 tail", {DType::kFloat32, DType::kFloat16});
  ASSERT_FALSE(cases.empty());
  run(cases);
}

std::unique_ptr<Graph> model(const char* file) {
  const char* env = std::getenv("YOLOC_SHARED_DIR");
  const auto path = std::filesystem::path(env ? env : YOLOC_SHARED_DIR) / "models" / file;
  if (!std::filesystem::exists(path)) return nullptr;
  return optimized(onnx_frontend::import_onnx(path.string()));
}

class CudaGenericModels : public ::testing::TestWithParam<const char*> {};

// Every group the conv templates leave, fp32; the detect tail also fp16.
TEST_P(CudaGenericModels, EveryGenericGroup) {
  const auto g = model(GetParam());
  if (!g) GTEST_SKIP() << "no " << GetParam();
  auto cases = cases_of(*g, GetParam(), {DType::kFloat32});
  for (GroupCase& c : generic_cases(*g, DType::kFloat16, GetParam(), GroupKind::kDetectTail)) {
    cases.push_back(std::move(c));
  }
  run(cases);
}

INSTANTIATE_TEST_SUITE_P(Shared, CudaGenericModels,
                         ::testing::Values("yolov8n.onnx", "yolox-nano-facemask.onnx",
                                           "yolo11n-dynint8-320.onnx",
                                           "yolov10n-dynint8-e2e.onnx"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) {
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
