// Boxes decoded by the head's box pairs (CudaConvTask::boxes): a b2b pair whose second stage is
// a level's DFL box logits decodes them, from its staged output tile, with the detect tail's box
// unit straight into the detector's [N, 4 + C, A] output. In the host emulation (cuda_emulator.h)
// against the pair's reference logits (rounded to their stored type) through a float64 DFL and
// the tail's decode statements, on yolov8n's real tail (its DFL weights, anchor points and
// strides), with every other output byte untouched; the kernels built by NVRTC for sm_90 and
// sm_80; and the validity rules and keys.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "codegen/cuda/detect_tail_template.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tasks.h"
#include "conv_test_util.h"
#include "cuda_emulator.h"
#include "shared_model_util.h"

namespace yoloc::codegen::cuda::testing {
namespace boxes_tests {  // named: the unity build joins this file with others

const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
const Activation silu = Activation::kSilu, none = Activation::kNone;

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

// The tail with its output stored as `out`.
std::shared_ptr<const DetectTailTask> with_output(std::shared_ptr<const DetectTailTask> t,
                                                  DType out) {
  auto copy = std::make_shared<DetectTailTask>(*t);
  copy->output.dtype = out;
  return copy;
}

// The box pair of a level of h x w pixels (64 -> 64 3x3, then the 1x1 to the S x R logits,
// NCHW or NHWC), decoding into `tail`'s output from anchor `base`.
CudaConvTask box_pair(const std::shared_ptr<const DetectTailTask>& tail, int64_t h, int64_t w,
                      int64_t base, bool nchw) {
  const int64_t logits = tail->sides * tail->bins;
  CudaConvTask t = with_b2b(
      CudaConvTask::dense(ConvTask::make(tail->n, 64, h, w, 64, 3, 1, 1, silu), f16, f16), logits,
      none, {logits, 0}, nchw, f16, 9);
  t.sm = 90;
  t.boxes = CudaBoxesOut{tail, base};
  return t;
}

double operand(const DetectTailOperand& o, const std::vector<double>& d,
               const std::vector<double>& temps, const DetectTailTask& t, int64_t a) {
  switch (o.kind) {
    case DetectTailOperand::Kind::kDistance: return d[static_cast<size_t>(o.index)];
    case DetectTailOperand::Kind::kTemp: return temps[static_cast<size_t>(o.index)];
    case DetectTailOperand::Kind::kTable:
      return t.table[static_cast<size_t>(o.index * t.anchors + a)];
    case DetectTailOperand::Kind::kLiteral: return o.literal;
  }
  return 0;
}

// The box channels of anchor a (output channel, value) from its S x R logits, in float64.
std::vector<std::pair<int64_t, double>> decode(const DetectTailTask& t,
                                               const std::vector<double>& logits, int64_t a) {
  std::vector<double> d(static_cast<size_t>(t.sides));
  for (int64_t s = 0; s < t.sides; ++s) {
    double m = -INFINITY, sum = 0, acc = 0;
    for (int64_t r = 0; r < t.bins; ++r) m = std::max(m, logits[static_cast<size_t>(s * t.bins + r)]);
    for (int64_t r = 0; r < t.bins; ++r) {
      const double e = std::exp(logits[static_cast<size_t>(s * t.bins + r)] - m);
      sum += e;
      acc += e * t.dfl_weights[static_cast<size_t>(r)];
    }
    d[static_cast<size_t>(s)] = acc / sum + t.dfl_bias;
  }
  std::vector<double> temps;
  for (const DetectTailStatement& s : t.decode) {
    const double x = operand(s.a, d, temps, t, a), y = operand(s.b, d, temps, t, a);
    temps.push_back(s.op == '+' ? x + y : s.op == '-' ? x - y : s.op == '*' ? x * y : x / y);
  }
  std::vector<std::pair<int64_t, double>> out;
  for (size_t k = 0; k < t.box_out.size(); ++k) {
    const int64_t ch = t.class_offset == 0 ? t.classes + static_cast<int64_t>(k)
                                           : static_cast<int64_t>(k);
    out.emplace_back(ch, operand(t.box_out[k], d, temps, t, a));
  }
  return out;
}

// Emulates t with cfg and checks the detector output against the reference decode of the pair's
// logits (want: NCHW float32, rounded here to the logits' stored type).
::testing::AssertionResult check(const EmulatedKernels& emu, const CudaKernel& k,
                                 const CudaConvTask& t, uint32_t seed) {
  const ConvOperands o = make_operands(first_stage(t), seed);
  const Tensor want = rounded_to(reference_b2b(t, o), t.b2b->out_dtype);
  const Tensor packed = TensorCoreConvTemplate::pack_weights(t, o.w.data<float>());
  const Tensor packed2 = TensorCoreConvTemplate::pack_b2b_weights(t);
  const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
  const DetectTailTask& tail = *t.boxes->tail;
  const DType od = tail.output.dtype;
  const std::vector<int64_t>& os = tail.output.strides;
  std::vector<uint8_t> y(static_cast<size_t>(tail.n * os[0]) * dtype_size(od), 0x5a);
  std::vector<float> table(tail.table.begin(), tail.table.end());
  const std::string err = emu.launch(k, {{x.data(), x.size()},
                                         {packed.raw(), packed.nbytes()},
                                         {o.b.raw(), o.b.nbytes()},
                                         {nullptr, 0},
                                         {y.data(), y.size()},
                                         {nullptr, 0},
                                         {packed2.raw(), packed2.nbytes()},
                                         {t.b2b->bias.raw(), t.b2b->bias.nbytes()},
                                         {table.data(), table.size() * sizeof(float)}});
  if (!err.empty()) return ::testing::AssertionFailure() << err;
  const ConvTask& c = t.conv;
  const int64_t hw = c.oh * c.ow, logits = t.b2b->k;
  const size_t es = dtype_size(od);
  std::vector<bool> mine(y.size() / es, false);
  int bad = 0;
  std::string first;
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t p = 0; p < hw; ++p) {
      std::vector<double> v(static_cast<size_t>(logits));
      for (int64_t ch = 0; ch < logits; ++ch)
        v[static_cast<size_t>(ch)] = want.data<float>()[(i * logits + ch) * hw + p];
      const int64_t a = t.boxes->base + p;
      for (const auto& [ch, value] : decode(tail, v, a)) {
        const auto at = static_cast<size_t>(i * os[0] + ch * os[1] + a * os[2]);
        mine[at] = true;
        const double got = stored_element(y, at, od);
        // The logits' rounding may differ from the reference's by an ulp (another summation
        // order): about 1e-3 of a box coordinate of the 20x20 level (stride 32).
        const double tol = (od == f32 ? 2e-3 : 4e-3) * std::fabs(value) + 1e-2;
        if (!(std::fabs(got - value) <= tol) && bad++ == 0)
          first = fmt::format("image {} anchor {} channel {}: got {}, want {}", i, a, ch, got, value);
      }
    }
  for (size_t e = 0; e < mine.size(); ++e) {
    if (mine[e]) continue;
    for (size_t b = 0; b < es; ++b)
      if (y[e * es + b] != 0x5a && bad++ == 0) first = fmt::format("element {} written", e);
  }
  if (bad) return ::testing::AssertionFailure() << bad << " bad; first: " << first;
  return ::testing::AssertionSuccess();
}

TEST(CudaBoxesEmulated, PairsDecodeTheirLevelsBoxesIntoTheDetectorOutput) {
  const auto tail = yolov8n_tail();
  if (!tail) GTEST_SKIP() << "no shared models";
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
  const auto tail = yolov8n_tail();
  if (!tail) GTEST_SKIP() << "no shared models";
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
    NvrtcOptions opts;
    opts.arch = arch;
    const CompiledModule out = nvrtc_compile(source, symbols.front(), opts);
    EXPECT_GT(out.cubin.size(), 1000u);
    for (const std::string& sym : symbols)
      EXPECT_NE(out.ptx.find(".entry " + sym + "("), std::string::npos) << sym;
    EXPECT_NE(out.ptx.find("ex2.approx"), std::string::npos) << "the fast exp of the softmax";
  }
}

TEST(CudaBoxesRules, ValidityAndKeys) {
  const auto tail = yolov8n_tail();
  if (!tail) GTEST_SKIP() << "no shared models";
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
