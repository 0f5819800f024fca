// Boxes decoded by the head's box pairs (CudaConvTask::boxes): a b2b pair whose second stage is
// a level's DFL box logits decodes them, from its staged output tile, with the detect tail's box
// unit straight into the detector's [N, 4 + C, A] output. In the host emulation (cuda_emulator.h)
// against the pair's reference logits (rounded to their stored type) through a float64 DFL and
// the tail's decode statements (boxes_test_util.h), on a YOLOv8 tail built as the importer reads
// yolov8n's (checked against it), with every other output byte untouched; the kernels built by
// NVRTC for sm_90 and sm_80; and the validity rules and keys. (cuda_boxes_gpu_test runs them on
// a GPU.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "boxes_test_util.h"
#include "codegen/cuda/detect_tail_template.h"
#include "codegen/cuda/tasks.h"
#include "conv_test_util.h"
#include "cuda_emulator.h"
#include "nvrtc_test_util.h"
#include "shared_model_util.h"

namespace yoloc::codegen::cuda::testing {
namespace boxes_tests {  // named: the unity build joins this file with others

using namespace boxes;

const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
const Activation silu = Activation::kSilu;

// yolov8n's detect tail at batch 1 (fp16 heads), or null without the shared models.
std::shared_ptr<const DetectTailTask> yolov8n_tail() {
  static const std::shared_ptr<const DetectTailTask> tail = [] {
    std::shared_ptr<const DetectTailTask> out;
    const auto g = shared_cuda_model("yolov8n.onnx", Precision::kFp16);
    if (!g) return out;
    for (const FusedGroup& grp : g->groups) {
      if (grp.kind != GroupKind::kDetectTail) continue;
      const auto t = detect_tail_task_from_group(
          *g, grp, [&g](const Value* v) { return cuda_operand_of(*g, v); });
      if (t) out = std::make_shared<const DetectTailTask>(*t);
    }
    return out;
  }();
  return tail;
}

// Emulates kernel k of t and checks the detector output (boxes::check_boxes).
::testing::AssertionResult check(const EmulatedKernels& emu, const CudaKernel& k,
                                 const CudaConvTask& t, uint32_t seed) {
  const BoxInputs in = box_inputs(t, seed);
  std::vector<uint8_t> y = box_output(t, 0x5a);
  const std::string err = emu.launch(k, {{in.x.data(), in.x.size()},
                                         {in.packed.raw(), in.packed.nbytes()},
                                         {in.o.b.raw(), in.o.b.nbytes()},
                                         {nullptr, 0},
                                         {y.data(), y.size()},
                                         {nullptr, 0},
                                         {in.packed2.raw(), in.packed2.nbytes()},
                                         {t.b2b->bias.raw(), t.b2b->bias.nbytes()},
                                         {in.table.data(), in.table.size() * sizeof(float)}});
  if (!err.empty()) return ::testing::AssertionFailure() << err;
  return check_boxes(t, y, in.want, 0x5a);
}

TEST(CudaBoxesEmulated, PairsDecodeTheirLevelsBoxesIntoTheDetectorOutput) {
  const auto tail = yolov8_tail(1);
  struct Case {
    CudaConvTask task;
    ScheduleConfig cfg;
  };
  std::vector<Case> cases;
  // The 20x20 level (anchors 8000..8399) and a part of the 40x40 one's anchors (a 12 x 20 map
  // from anchor 6400), NCHW and NHWC logits, float32 and float16 outputs; three configs each.
  for (const auto& [h, w, base] : {std::tuple<int64_t, int64_t, int64_t>{20, 20, 8000},
                                   std::tuple<int64_t, int64_t, int64_t>{12, 20, 6400}}) {
    for (bool nchw : {true, false}) {
      for (DType od : {f32, f16}) {
        const CudaConvTask t = box_pair(with_output(tail, od), h, w, base, nchw);
        ASSERT_TRUE(TensorCoreConvTemplate::matches(t)) << t.key();
        int here = 0;
        for (const ScheduleConfig& cfg : b2b_configs(t))
          if (TensorCoreConvTemplate::valid(t, cfg) && here++ < 3) cases.push_back({t, cfg});
      }
    }
  }
  std::vector<CudaKernel> kernels;
  for (const Case& c : cases)
    kernels.push_back(TensorCoreConvTemplate::emit(c.task, c.cfg, fmt::format("k{}", kernels.size())));
  const EmulatedKernels emu(kernels);  // one host build
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].task.key() + " | " + cases[i].cfg.str());
    EXPECT_TRUE(check(emu, kernels[i], cases[i].task, 80 + static_cast<uint32_t>(i)));
  }
  EXPECT_GE(cases.size(), 16u);
}

// yolov8n's three box pairs at batch 1 (its levels' anchors, NCHW logits, float32 output), the
// default config and every valid one of b2b_configs, as NVRTC builds them.
TEST(CudaBoxesNvrtc, Yolov8nBoxPairsBuild) {
  const auto tail = yolov8_tail(1);
  for (const char* arch : {"sm_90", "sm_80"}) {
    SCOPED_TRACE(arch);
    std::string source;
    std::vector<std::string> symbols;
    for (const DetectTailLevel& l : tail->levels) {
      CudaConvTask t = box_pair(tail, l.h, l.w, l.first, true);
      t.sm = std::string(arch) == "sm_90" ? 90 : 80;
      for (const ScheduleConfig& cfg : b2b_configs(t)) {
        if (!TensorCoreConvTemplate::valid(t, cfg)) continue;
        symbols.push_back(fmt::format("box_{}", symbols.size()));
        source += TensorCoreConvTemplate::emit(t, cfg, symbols.back()).source;
      }
    }
    ASSERT_GE(symbols.size(), 6u);
    const CompiledModule out = expect_module_builds(source, symbols, arch);
    EXPECT_NE(out.ptx.find("ex2.approx"), std::string::npos) << "the fast exp of the softmax";
  }
}

// The hand-built tail of the tests is what the importer and detect_tail_task_from_group make of
// yolov8n: the same key (levels, head-output strides, decode, output) and constants.
TEST(CudaBoxesRules, HandBuiltTailIsYolov8ns) {
  const auto real = yolov8n_tail();
  if (!real) GTEST_SKIP() << "no shared models";
  const auto made = yolov8_tail(1);
  EXPECT_EQ(made->key(), real->key());
  EXPECT_EQ(made->table, real->table);
  EXPECT_EQ(made->dfl_weights, real->dfl_weights);
  EXPECT_EQ(made->dfl_bias, real->dfl_bias);
}

TEST(CudaBoxesRules, ValidityAndKeys) {
  const auto tail = yolov8_tail(1);
  const CudaConvTask t = box_pair(tail, 20, 20, 8000, true);
  ASSERT_TRUE(TensorCoreConvTemplate::matches(t));
  EXPECT_EQ(t.key(), "cuda_conv2d_nhwc f16->f16 n1 c64 h20 w20 k64 3x3 s1x1 p1x1 d1x1 silu in64+0 "
                     "out64+0 b2b k2=64 none ->f16 out64+0 nchw boxes8000/8400 ->f32");
  // Decoded from the staged tile only.
  ScheduleConfig c = TensorCoreConvTemplate::default_config(t);
  EXPECT_EQ(c.get("epi"), 1);
  c.set("epi", 0);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, c));
  // Its twin's config with epi=0 is taken with epi=1 (twin_config).
  CudaConvTask twin = t;
  twin.boxes.reset();
  const auto from_twin = twin_config(TensorCoreConvTemplate::space(t), c,
                                     [&t](const ScheduleConfig& x) {
                                       return TensorCoreConvTemplate::valid(t, x);
                                     });
  ASSERT_TRUE(from_twin.has_value());
  c.set("epi", 1);
  EXPECT_EQ(*from_twin, c);
  // The map must lie within the tail's anchors, be all the S x R logits (dense), and have no
  // activation of its own.
  EXPECT_FALSE(TensorCoreConvTemplate::matches(box_pair(tail, 20, 20, 8100, true)));
  CudaConvTask sliced = t;
  sliced.b2b->out = {128, 0};
  EXPECT_FALSE(TensorCoreConvTemplate::matches(sliced));
  CudaConvTask act = t;
  act.b2b->act = silu;
  EXPECT_FALSE(TensorCoreConvTemplate::matches(act));
  // Not with class scores, not on a lone conv.
  CudaConvTask lone = t;
  lone.b2b.reset();
  EXPECT_FALSE(TensorCoreConvTemplate::matches(lone));
}

}  // namespace boxes_tests
}  // namespace yoloc::codegen::cuda::testing
