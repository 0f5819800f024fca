// Class scores stored by the head convs (CudaConvTask::scores): a tensor-core conv or b2b pair
// whose output is the detector's class scores writes their sigmoids straight into the detector's
// [N, R, A] output, channel c of pixel p of image i at (i * R + offset + c) * plane + base + p. In
// the host emulation (cuda_emulator.h) against the reference executor's conv and a float64
// sigmoid, with the rest of the output untouched; the validity rules and keys; and yolov8n's
// extraction (three class pairs store their scores, the tail has box units only, the class head
// outputs are never stored).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "codegen/cuda/tasks.h"
#include "codegen/memory_plan.h"
#include "conv_test_util.h"
#include "cuda_emulator.h"
#include "shared_model_util.h"

namespace yoloc::codegen::cuda::testing {
namespace scores_tests {  // named: the unity build joins this file with others

const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
const Activation silu = Activation::kSilu, none = Activation::kNone;

// t storing its (second stage's) output as class scores into rows `rows` (offset: the first class
// row) of planes of `plane` elements, from element `base` of each.
CudaConvTask with_scores(CudaConvTask t, ChannelSlice rows, int64_t plane, int64_t base,
                         DType out) {
  if (t.b2b) {
    t.b2b->out = rows;
    t.b2b->out_dtype = out;
  } else {
    t.out = rows;
    t.out_dtype = out;
  }
  t.scores = CudaScoresOut{plane, base};
  return t;
}

// Checks the detector output y (n images of rows.stride planes) against sigmoid(want) (NCHW
// float32 [n, k, oh, ow]) at the task's places, and every other byte still `fill`.
::testing::AssertionResult check_scores(const CudaConvTask& t, const std::vector<uint8_t>& y,
                                        const Tensor& want, uint8_t fill) {
  const CudaConvTask last = t.b2b ? t.second_stage() : t;
  const ConvTask& c = last.conv;
  const int64_t hw = c.oh * c.ow, plane = t.scores->plane, base = t.scores->base;
  const size_t es = dtype_size(last.out_dtype);
  std::vector<bool> mine(y.size() / es, false);
  int bad = 0;
  std::string first;
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t p = 0; p < hw; ++p) {
        const auto at =
            static_cast<size_t>((i * last.out.stride + last.out.offset + k) * plane + base + p);
        mine[at] = true;
        const double x = want.data<float>()[(i * c.k + k) * hw + p];
        const double s = 1.0 / (1.0 + std::exp(-x));
        const double got = stored_element(y, at, last.out_dtype);
        if (!(std::fabs(got - s) <= (last.out_dtype == f32 ? 1e-4 : 2e-3)) && bad++ == 0)
          first = fmt::format("image {} class {} pixel {}: got {}, want {}", i, k, p, got, s);
      }
  count_written_outside(y, mine, es, fill, bad, first);
  if (bad) return ::testing::AssertionFailure() << bad << " bad; first: " << first;
  return ::testing::AssertionSuccess();
}

struct Case {
  CudaConvTask task;
  ScheduleConfig cfg;
};

void run(const std::vector<Case>& cases) {
  std::vector<CudaKernel> kernels;
  for (const Case& c : cases) {
    EXPECT_TRUE(TensorCoreConvTemplate::valid(c.task, c.cfg)) << c.task.key() << " " << c.cfg.str();
    kernels.push_back(TensorCoreConvTemplate::emit(c.task, c.cfg, fmt::format("k{}", kernels.size())));
  }
  const EmulatedKernels emu(kernels);
  for (size_t i = 0; i < cases.size(); ++i) {
    const CudaConvTask& t = cases[i].task;
    SCOPED_TRACE(t.key() + " | " + cases[i].cfg.str());
    const CudaConvTask first = t.b2b ? first_stage(t) : t;
    CudaConvTask plain = first;  // its own dense output, for the reference
    plain.scores.reset();
    const ConvOperands o = make_operands(plain, 70 + static_cast<uint32_t>(i));
    const Tensor want = t.b2b ? reference_b2b(t, o) : o.want;
    const Tensor packed = TensorCoreConvTemplate::pack_weights(t, o.w.data<float>());
    const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
    const CudaConvTask last = t.b2b ? t.second_stage() : t;
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * last.out.stride * t.scores->plane) *
                               dtype_size(last.out_dtype),
                           0x5a);
    std::vector<EmulatedKernels::Buffer> args = {{x.data(), x.size()},
                                                 {packed.raw(), packed.nbytes()},
                                                 {o.b.raw(), o.b.nbytes()},
                                                 {nullptr, 0},
                                                 {y.data(), y.size()},
                                                 {nullptr, 0}};
    Tensor packed2;
    if (t.b2b) {
      packed2 = TensorCoreConvTemplate::pack_b2b_weights(t);
      args.push_back({packed2.raw(), packed2.nbytes()});
      args.push_back({t.b2b->bias.raw(), t.b2b->bias.nbytes()});
    }
    EXPECT_EQ(emu.launch(kernels[i], args), "");
    EXPECT_TRUE(check_scores(t, y, want, 0x5a));
  }
}

TEST(CudaScoresEmulated, PairsAndConvsStoreSigmoidsIntoTheDetectorOutput) {
  std::vector<Case> cases;
  const auto add = [&](const CudaConvTask& t, const std::vector<ScheduleConfig>& cfgs) {
    ASSERT_TRUE(TensorCoreConvTemplate::matches(t)) << t.key();
    for (const ScheduleConfig& c : cfgs)
      if (TensorCoreConvTemplate::valid(t, c)) cases.push_back({t, c});
  };
  // A class pair of 12 classes at 7x8 into rows 4.. of 16, planes of 96 from element 24 (staged
  // 16-byte stores where aligned), fp16 and fp32 outputs, batch 2.
  const CudaConvTask pair = with_b2b(
      CudaConvTask::dense(ConvTask::make(2, 16, 7, 8, 80, 3, 1, 1, silu), f16, f16), 12, none,
      {12, 0}, true, f16, 5);
  for (DType out : {f16, f32}) {
    const CudaConvTask t = with_scores(pair, {16, 4}, 96, 24, out);
    add(t, b2b_configs(t));
  }
  // A lone conv (the head's last conv unpaired), 3x3 without activation, batch 2, odd classes.
  const CudaConvTask conv = nchw_out(
      CudaConvTask::dense(ConvTask::make(2, 16, 6, 8, 10, 3, 1, 1, none), f16, f16));
  for (DType out : {f16, f32}) {
    const CudaConvTask t = with_scores(conv, {15, 5}, 72, 8, out);
    add(t, tc_configs(t));
  }
  EXPECT_GE(cases.size(), 16u);
  const auto staged = std::count_if(cases.begin(), cases.end(), [](const Case& c) {
    return c.task.b2b && c.cfg.get("epi") == 1;
  });
  EXPECT_GE(staged, 3) << "staged stores of the fp16 pair";
  run(cases);
}

TEST(CudaScoresRules, ValidityAndKeys) {
  const CudaConvTask pair = with_b2b(
      CudaConvTask::dense(ConvTask::make(1, 16, 8, 8, 80, 3, 1, 1, silu), f16, f16), 80, none,
      {80, 0}, true, f16, 5);
  const CudaConvTask t = with_scores(pair, {84, 4}, 100, 32, f16);
  EXPECT_TRUE(TensorCoreConvTemplate::matches(t));
  EXPECT_EQ(t.key(), pair.key().substr(0, pair.key().find(" b2b")) +
                         " b2b k2=80 none ->f16 out84+4 nchw scores32/100");
  // The map must fit its planes from `base` on.
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_scores(pair, {84, 4}, 100, 40, f16)));
  // Scores are the sigmoid of the conv alone: no activation of its own, NCHW only.
  CudaConvTask act = pair;
  act.b2b->act = silu;
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_scores(act, {84, 4}, 100, 0, f16)));
  CudaConvTask nhwc = pair;
  nhwc.b2b->out_nchw = false;
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_scores(nhwc, {84, 4}, 100, 0, f16)));
  // A staged fp32 store does not exist: epi=1 is invalid there.
  const CudaConvTask wide = with_scores(pair, {84, 4}, 100, 0, f32);
  ScheduleConfig c = TensorCoreConvTemplate::default_config(wide);
  c.set("epi", 1);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(wide, c));
}

// yolov8n fp16 for CUDA with every b2b pair fused: the three class pairs of the head store their
// scores into the output, the three box pairs decode their boxes into it, no detect tail is left
// to run, and the memory plan stores no class or box head output. Without the box pairs (no b2b)
// the tail decodes the boxes.
TEST(CudaScoresExtraction, Yolov8nHeadPairsStoreScoresAndBoxes) {
  const auto g = shared_cuda_model("yolov8n.onnx", Precision::kFp16);
  if (!g) GTEST_SKIP() << "no shared models";
  const std::vector<CudaTask> tasks = extract_cuda_tasks(*g, 90, B2bPolicy::all());
  int tails = 0;
  std::map<std::string, std::set<int64_t>> bases;  // by " scores" / " boxes"
  for (const CudaTask& t : tasks) {
    for (const std::string form : {" scores", " boxes"}) {
      if (t.key.find(form) == std::string::npos) continue;
      EXPECT_NE(t.key.find(form == " scores" ? " b2b k2=80 none ->f32 out84+4 nchw scores"
                                             : " b2b k2=64 none ->f16 out64+0 nchw boxes"),
                std::string::npos)
          << t.key;
      EXPECT_FALSE(t.twin_key.empty());
      EXPECT_EQ(t.twin_key.find(form), std::string::npos);
      ASSERT_TRUE(t.redirected_from && t.redirected_into);
      EXPECT_EQ(t.redirected_into, g->outputs[0]);
      bases[form].insert(std::stoll(t.key.substr(t.key.rfind(form) + form.size())));
    }
    tails += t.template_name == "detect_tail";
  }
  EXPECT_EQ(tails, 0);
  const std::set<int64_t> levels{0, 6400, 8000};
  EXPECT_EQ(bases[" scores"], levels);
  EXPECT_EQ(bases[" boxes"], levels);
  int box_units = 0;
  for (const CudaTask& t : extract_cuda_tasks(*g, 90, B2bPolicy{})) {
    EXPECT_EQ(t.key.find(" boxes"), std::string::npos) << t.key;
    box_units += t.template_name == "detect_tail";
  }
  EXPECT_EQ(box_units, 1);
  const MemoryPlan plan = plan_memory(*g, merged_groups(tasks), Reuse::kOrdered, redirects(tasks));
  verify_memory_plan(plan);
  for (const Redirect& r : redirects(tasks)) {
    EXPECT_EQ(plan.values.at(r.from->name).placement, Placement::kInternal) << r.from->name;
    // The output lives from the first class pair on.
    const ValueSlot& out = plan.values.at(r.into->name);
    const Allocation& a = plan.allocations.at(static_cast<size_t>(out.allocation));
    int first_node = -1, i = 0;
    for (const Node* n : g->nodes()) {
      if (n->group == r.group && first_node < 0) first_node = i;
      ++i;
    }
    EXPECT_LE(a.first, first_node);
  }
}

}  // namespace scores_tests
}  // namespace yoloc::codegen::cuda::testing
