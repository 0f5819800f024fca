// The CUDA conv templates run in the host emulation (cuda_emulator.h) against the reference
// executor: every kernel variant (16-byte and element-wise input loads, stride, dilation, padding,
// channel counts that are not multiples of the tiles, batch 2, ReLU/SiLU, residual, channel
// slices of the input, residual and output, fp16/bf16/fp32 in, fp16/bf16/fp32 out, NHWC and NCHW
// outputs; for the direct template the NCHW float32 image and NHWC inputs, windows of 1x1 to 6x6,
// strides 1 to 3) x several configs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "conv_test_util.h"
#include "cuda_emulator.h"
#include "tuner/records.h"

namespace yoloc::codegen::cuda::testing {
namespace {

struct Case {
  Template tmpl;
  CudaConvTask task;
  ScheduleConfig cfg;
  CudaKernel kernel;
};

// Emits every (task, config), builds them in one shared object, runs each on random operands and
// compares with the reference.
void run_configs(Template tmpl, const std::vector<std::pair<CudaConvTask, ScheduleConfig>>& todo) {
  std::vector<Case> cases;
  std::vector<CudaKernel> kernels;
  for (const auto& [t, cfg] : todo) {
    ASSERT_TRUE(template_matches(tmpl, t)) << t.key();
    const CudaKernel k = template_emit(tmpl, t, cfg, fmt::format("k{}", cases.size()));
    cases.push_back({tmpl, t, cfg, k});
    kernels.push_back(k);
  }
  const EmulatedKernels emu(kernels);
  uint32_t seed = 11;
  for (const Case& c : cases) {
    const CudaConvTask& t = c.task;
    SCOPED_TRACE(t.key() + " | " + template_tag(c.tmpl) + " " + c.cfg.str());
    const ConvOperands o = make_operands(t, seed += 10);
    const Tensor packed = template_weights(c.tmpl, t, o.w);
    const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
    const std::vector<uint8_t> res = to_nhwc_buffer(o.res, t.out_dtype, t.res, 0x7f, t.out_nchw);
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow * t.out.stride) *
                               dtype_size(t.out_dtype),
                           0x5a);
    std::vector<uint8_t> up(t.up ? upsampled_bytes(t) : 0, 0x5a);
    const std::string err = emu.launch(
        c.kernel, {x.data(), x.size()}, {packed.raw(), packed.nbytes()}, o.b.data<float>(),
        {t.conv.residual ? res.data() : nullptr, res.size()}, y.data(), y.size(),
        {t.up ? up.data() : nullptr, up.size()});
    EXPECT_EQ(err, "");
    EXPECT_TRUE(check_output(t, y, o.want, 0x5a));
    if (t.up) {
      EXPECT_TRUE(check_output(upsampled_view(t), up,
                               upsample_nearest(o.want, t.up->sh, t.up->sw), 0x5a))
          << "upsampled copy";
    }
  }
}

// Every config of template_configs for every task.
void run(Template tmpl, const std::vector<CudaConvTask>& tasks) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (const CudaConvTask& t : tasks) {
    ASSERT_TRUE(template_matches(tmpl, t)) << t.key();
    for (const ScheduleConfig& cfg : template_configs(tmpl, t)) todo.emplace_back(t, cfg);
  }
  run_configs(tmpl, todo);
}

// Tasks over every path of the kernels, activations stored as `dtype`.
std::vector<CudaConvTask> tasks(DType dtype) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  return {
      // The first conv: 3 channels, element-wise loads, one 32-deep step (27 taps).
      CudaConvTask::dense(ConvTask::make(1, 3, 11, 13, 16, 3, 2, 1, Activation::kSilu), dtype,
                          dtype == f32 ? f32 : dtype),
      // Bottleneck-like: input, residual and output are slices of wider buffers.
      sliced(ConvTask::make(1, 16, 6, 7, 32, 3, 1, 1, Activation::kRelu, true), dtype,
             dtype == f32 ? f32 : dtype, {24, 8}, {48, 16}, {40, 8}),
      // 1x1, batch 2, K = 24 (not a multiple of 16), fp32 output.
      CudaConvTask::dense(ConvTask::make(2, 64, 5, 7, 24, 1, 1, 0), dtype, f32),
      // 12 channels (not a multiple of 8: element-wise), K = 19 (odd: a lone last channel),
      // odd output and residual strides and offsets (element-wise epilogue stores), fp16 output.
      sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, Activation::kSilu, true), dtype, f16, {12, 0},
             {21, 1}, {23, 3}),
      // Dilation 2.
      CudaConvTask::dense(dilated(1, 8, 8, 8, 16, 3, 2, 2, Activation::kNone), dtype,
                          dtype == f32 ? f32 : dtype),
      // Stride 2, no padding, residual, deeper than the pipeline ring (KG = 288).
      CudaConvTask::dense(ConvTask::make(1, 32, 9, 9, 16, 3, 2, 0, Activation::kSilu, true), dtype,
                          dtype == f32 ? f32 : dtype),
  };
}

TEST(CudaConvEmulated, TensorCoreFp16) { run(Template::kTensorCore, tasks(DType::kFloat16)); }

TEST(CudaConvEmulated, TensorCoreBf16) {
  const std::vector<CudaConvTask> all = tasks(DType::kBFloat16);
  run(Template::kTensorCore, {all[0], all[1], all[5]});
}

// The first conv reading the NCHW float32 image (batch 2), fp16 and bf16.
TEST(CudaConvEmulated, TensorCoreImageInput) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    CudaConvTask t =
        CudaConvTask::dense(ConvTask::make(2, 3, 11, 13, 16, 3, 2, 1, Activation::kSilu), dt, dt);
    t.in_nchw = true;
    EXPECT_FALSE(SimtConvTemplate::matches(t));
    run(Template::kTensorCore, {t});
  }
}

// YOLOX's head: 1x1 convs to 4, 1 and 2 channels written into the 7-channel concat of a level
// (odd stride, slices at 0, 4 and 5).
TEST(CudaConvEmulated, TensorCoreNarrowHeadSlices) {
  const DType f16 = DType::kFloat16;
  run(Template::kTensorCore,
      {sliced(ConvTask::make(1, 64, 6, 5, 4, 1, 1, 0), f16, f16, {64, 0}, {7, 0}, {7, 0}),
       sliced(ConvTask::make(1, 64, 6, 5, 1, 1, 1, 0), f16, f16, {64, 0}, {7, 4}, {7, 4}),
       sliced(ConvTask::make(1, 64, 6, 5, 2, 1, 1, 0), f16, f16, {64, 0}, {7, 5}, {7, 5})});
}

// Split-K (sm_90 clusters; the emulator runs a cluster's blocks together) over tasks whose depth
// steps do not divide among the splits (KT = 7, 9, 18: splits of 1 to 5 steps, and splits that
// complete no fragment when there are fewer fragments than blocks), with a residual, slices of
// the input, residual and output, element-wise loads, an fp32 output with K = 24, and NCHW.
std::vector<std::pair<CudaConvTask, ScheduleConfig>> splitk_cases(DType dtype) {
  const DType f32 = DType::kFloat32;
  std::vector<CudaConvTask> tasks = {
      // KG = 288: 18 steps of 16, 9 of 32.
      sliced(ConvTask::make(1, 32, 6, 7, 32, 3, 1, 1, Activation::kRelu, true), dtype, dtype,
             {40, 8}, {48, 16}, {40, 8}),
      // 1x1, KG = 128, K = 24, batch 2 (two images in a pixel tile), fp32 output.
      CudaConvTask::dense(ConvTask::make(2, 128, 4, 5, 24, 1, 1, 0), dtype, f32),
      // 12 channels: element-wise loads; KG8 = 112, 7 steps of 16; odd output slice, K = 19.
      sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, Activation::kSilu, true), dtype,
             DType::kFloat16, {12, 0}, {21, 1}, {23, 3}),
      nchw_out(sliced(ConvTask::make(1, 32, 5, 6, 20, 3, 1, 1, Activation::kSilu, true), dtype,
                      dtype, {32, 0}, {48, 16}, {40, 8}))};
  const std::vector<std::map<std::string, int64_t>> shapes = {
      {{"bm", 32}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 3}},
      {{"bm", 64}, {"bn", 32}, {"bk", 32}, {"wm", 32}, {"wn", 16}, {"stages", 2}},
      {{"bm", 32}, {"bn", 64}, {"bk", 16}, {"wm", 16}, {"wn", 32}, {"stages", 4}}};
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> out;
  for (CudaConvTask& t : tasks) {
    t.sm = 90;
    for (const auto& shape : shapes) {
      for (int64_t s : {2, 4, 8}) {
        ScheduleConfig cfg = TensorCoreConvTemplate::space(t).complete(ScheduleConfig(shape));
        cfg.set("splitk", s);
        if (TensorCoreConvTemplate::valid(t, cfg)) out.emplace_back(t, cfg);
      }
    }
  }
  return out;
}

TEST(CudaConvEmulated, TensorCoreSplitKFp16) {
  const auto cases = splitk_cases(DType::kFloat16);
  EXPECT_GE(cases.size(), 30u);
  run_configs(Template::kTensorCore, cases);
}

TEST(CudaConvEmulated, TensorCoreSplitKBf16) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> some;
  for (const auto& c : splitk_cases(DType::kBFloat16))
    if (c.second.get("bm") == 32 && c.second.get("bn") == 32) some.push_back(c);
  run_configs(Template::kTensorCore, some);
}

// Split-K needs sm_90 and a depth step per split; a config without the knob (a record written
// before it) is valid and means one block per tile; the default splits only small deep layers.
TEST(CudaConvEmulated, TensorCoreSplitKRules) {
  const DType f16 = DType::kFloat16;
  CudaConvTask t = sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, Activation::kSilu, true), f16,
                          f16, {12, 0}, {21, 1}, {23, 3});  // 7 steps of 16
  const std::map<std::string, int64_t> shape = {{"bm", 32}, {"bn", 32}, {"bk", 16},
                                                {"wm", 16}, {"wn", 16}, {"stages", 3}};
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  // A config stored before the knob (and l1, epi) existed is read as splitk=1 (Knob::absent).
  const ScheduleConfig old(shape);
  ScheduleConfig one = with_l1_epi(old, 0, 0), four = one, eight = one;
  one.set("splitk", 1);
  four.set("splitk", 4);
  eight.set("splitk", 8);
  EXPECT_FALSE(old.in_space(space));
  EXPECT_EQ(space.complete(old), one);
  EXPECT_EQ(space.complete(four), four);
  ScheduleConfig extra = one;
  extra.set("unknown", 1);
  EXPECT_FALSE(extra.in_space(space));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, one));
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, four));  // sm_80
  t.sm = 90;
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, one));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, four));
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, eight));  // 7 steps for 8 splits
  // Split tiles are finished by their owners, not staged.
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, with_l1_epi(four, 0, 1)));
  const CudaKernel k_one = TensorCoreConvTemplate::emit(t, one, "k");
  EXPECT_EQ(k_one.grid[2], 1u);
  EXPECT_EQ(k_one.source.find("YC_CLUSTER_DIMS(1, 1,"), std::string::npos);
  const CudaKernel k4 = TensorCoreConvTemplate::emit(t, four, "k");
  EXPECT_EQ(k4.grid, (std::array<unsigned, 3>{2, 1, 4}));
  EXPECT_EQ(k4.cluster, (std::array<unsigned, 3>{1, 1, 4}));
  EXPECT_NE(k4.source.find("YC_CLUSTER_DIMS(1, 1, 4)"), std::string::npos);

  // yolov8n at batch 1: a 3x3 conv over 256 channels at 20x20 (65 tiles of 72 steps) splits in 4
  // on sm_90 only; a 3x3 conv at 80x80 (hundreds of tiles) does not split.
  CudaConvTask deep = CudaConvTask::dense(
      ConvTask::make(1, 256, 20, 20, 144, 3, 1, 1, Activation::kSilu), f16, f16);
  EXPECT_EQ(TensorCoreConvTemplate::default_config(deep).get("splitk"), 1);
  deep.sm = 90;
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(deep);
  EXPECT_EQ(def.get("splitk"), 4) << def.str();
  CudaConvTask wide =
      CudaConvTask::dense(ConvTask::make(1, 64, 80, 80, 64, 3, 1, 1, Activation::kSilu), f16, f16);
  wide.sm = 90;
  EXPECT_EQ(TensorCoreConvTemplate::default_config(wide).get("splitk"), 1);
}

// Channel tiles that divide K where K is not a multiple of 64 (the 80 class and 144 head
// channels of YOLOv8): the space offers them, and 16-, 48- and 80-wide warp tiles, staged and
// fragment epilogues, split-K and NCHW outputs compute them right.
TEST(CudaConvEmulated, TensorCoreExactChannelTiles) {
  const DType f16 = DType::kFloat16;
  const auto bn_domain = [](int64_t k) {
    const CudaConvTask t =
        CudaConvTask::dense(ConvTask::make(1, 16, 4, 4, k, 1, 1, 0, Activation::kNone),
                            DType::kFloat16, DType::kFloat16);
    return TensorCoreConvTemplate::space(t).knobs[1].domain;
  };
  using V = std::vector<int64_t>;
  EXPECT_EQ(bn_domain(80), (V{16, 32, 64, 80, 128, 256}));
  EXPECT_EQ(bn_domain(144), (V{16, 32, 48, 64, 128, 144, 256}));
  EXPECT_EQ(bn_domain(128), (V{16, 32, 64, 128, 256}));
  EXPECT_EQ(bn_domain(24), (V{16, 32, 64, 128, 256}));
  const auto wn_domain = [](int64_t k) {
    const CudaConvTask t =
        CudaConvTask::dense(ConvTask::make(1, 16, 4, 4, k, 1, 1, 0, Activation::kNone),
                            DType::kFloat16, DType::kFloat16);
    return TensorCoreConvTemplate::space(t).knobs[4].domain;
  };
  // (128 and 256, and 144 for 144 channels: one warp tile as wide as the block's, wg=2 only.)
  EXPECT_EQ(wn_domain(80), (V{16, 32, 64, 80, 128, 256}));
  EXPECT_EQ(wn_domain(144), (V{16, 32, 48, 64, 128, 144, 256}));
  EXPECT_EQ(wn_domain(128), (V{16, 32, 64, 128, 256}));
  std::vector<CudaConvTask> tasks = {
      sliced(ConvTask::make(1, 16, 6, 7, 80, 3, 1, 1, Activation::kSilu, true), f16, f16, {16, 0},
             {144, 64}, {80, 0}),
      CudaConvTask::dense(ConvTask::make(2, 32, 5, 6, 144, 3, 1, 1, Activation::kSilu), f16, f16),
      nchw_out(CudaConvTask::dense(ConvTask::make(1, 64, 5, 5, 48, 1, 1, 0), f16, f16))};
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (CudaConvTask& t : tasks) {
    t.sm = 90;
    for (ScheduleConfig c : exact_tile_configs(t)) {
      todo.emplace_back(t, c);
      c.set("splitk", 2);
      c.set("epi", 0);
      if (TensorCoreConvTemplate::valid(t, c)) todo.emplace_back(t, c);
    }
  }
  // 80: in 16- and 80-wide warps, epi 0 and 1, split; 144: tiles 48 and 144 in 16- and 48-wide
  // warps, less 144 x 16 (9 warps), and splits; 48 (NCHW): 4.
  size_t bn80 = 0, wn80 = 0;
  for (const auto& [t, c] : todo) {
    bn80 += c.get("bn") == 80;
    wn80 += c.get("wn") == 80;
  }
  EXPECT_GE(bn80, 6u);
  EXPECT_GE(wn80, 3u);
  EXPECT_GE(todo.size(), 20u);
  run_configs(Template::kTensorCore, todo);
}

// The knobs l1 (cp.async.ca input copies) and epi (the output tile staged in shared memory, then
// 16-byte residual loads and output stores): batch 2 with a partial last pixel tile, K = 20 (the
// last 4 channels fall back to pairs), a residual and an output in concat slices, fp16 and bf16;
// an fp32 output (vectors of 4 floats) of a 1x1 conv with a residual. tc_configs holds the l1
// and epi variants that are valid; each task here must have some.
TEST(CudaConvEmulated, TensorCoreL1AndStagedEpilogue) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  std::vector<CudaConvTask> all;
  for (DType dt : {f16, DType::kBFloat16}) {
    all.push_back(sliced(ConvTask::make(2, 16, 5, 7, 20, 3, 1, 1, Activation::kSilu, true), dt, dt,
                         {16, 0}, {40, 8}, {40, 16}));
  }
  all.push_back(sliced(ConvTask::make(1, 32, 9, 7, 24, 1, 1, 0, Activation::kRelu, true), f16, f32,
                       {32, 0}, {28, 4}, {24, 0}));
  for (const CudaConvTask& t : all) {
    int64_t l1 = 0, epi = 0;
    for (const ScheduleConfig& c : tc_configs(t)) {
      l1 += c.get("l1");
      epi += c.get("epi");
    }
    EXPECT_GE(l1, 2) << t.key();
    EXPECT_GE(epi, 4) << t.key();
  }
  run(Template::kTensorCore, all);
}

// The halo-tile tasks: strides 1 and 2, dilation 2, 1x1, 16 to 48 channels, edge tiles past the
// image (widths and heights that are no multiple of the tile), batch 2, input / residual / output
// slices, fp16 and bf16 (in and out), fp32 output.
std::vector<CudaConvTask> halo_tasks() {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16, f32 = DType::kFloat32;
  return {
      CudaConvTask::dense(ConvTask::make(2, 16, 11, 13, 32, 3, 1, 1, Activation::kSilu), f16, f16),
      CudaConvTask::dense(ConvTask::make(1, 32, 13, 18, 24, 3, 2, 1, Activation::kSilu), bf16,
                          bf16),
      CudaConvTask::dense(dilated(1, 48, 9, 10, 16, 3, 2, 2, Activation::kRelu), f16, f32),
      sliced(ConvTask::make(1, 16, 7, 9, 20, 3, 1, 1, Activation::kSilu, true), f16, f16, {24, 8},
             {40, 8}, {40, 16}),
      CudaConvTask::dense(ConvTask::make(1, 32, 5, 6, 16, 1, 1, 0), f16, f16),
  };
}

// Every valid variant(space.complete(shape)) of each task, shape and variant, at least `min` per
// task; then run_configs.
using Shape = std::map<std::string, int64_t>;
// Functions of a completed config to the variant a test runs (knobs set on top of a shape).
using Variants = std::vector<std::function<ScheduleConfig(ScheduleConfig)>>;
void run_valid(const std::vector<CudaConvTask>& tasks, const std::vector<Shape>& shapes,
               const Variants& variants, int64_t min) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (const CudaConvTask& t : tasks) {
    const ScheduleSpace space = TensorCoreConvTemplate::space(t);
    int64_t n = 0;
    for (const Shape& v : shapes) {
      for (const auto& variant : variants) {
        const ScheduleConfig c = variant(space.complete(ScheduleConfig(v)));
        if (!TensorCoreConvTemplate::valid(t, c)) continue;
        todo.emplace_back(t, c);
        ++n;
      }
    }
    EXPECT_GE(n, min) << t.key();
  }
  run_configs(Template::kTensorCore, todo);
}

// Halo tiles on halo_tasks(), 16-deep slices in steps of 16 to 64 (within a tap, across taps,
// across a tap's end), staged and fragment epilogues.
TEST(CudaConvEmulated, TensorCoreHaloTiles) {
  Variants variants;
  for (int64_t halo : {8, 16, 32}) {
    for (int64_t epi : {0, 1})
      variants.push_back([=](ScheduleConfig c) { return with_halo(std::move(c), halo, epi); });
  }
  run_valid(halo_tasks(),
            {{{"bm", 32}, {"bn", 16}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 2}},
             {{"bm", 64}, {"bn", 32}, {"bk", 16}, {"wm", 32}, {"wn", 16}, {"stages", 3}},
             {{"bm", 128}, {"bn", 32}, {"bk", 16}, {"wm", 64}, {"wn", 32}, {"stages", 4}},
             // Steps spanning taps (bk > C), or not dividing C (48 channels in steps of 32).
             {{"bm", 64}, {"bn", 16}, {"bk", 64}, {"wm", 32}, {"wn", 16}, {"stages", 2}},
             {{"bm", 32}, {"bn", 32}, {"bk", 32}, {"wm", 16}, {"wn", 32}, {"stages", 3}}},
            variants, 6);
}

// What halo tiles need: 16-byte copies (channels, slice stride and offset multiples of 8), 16-deep
// slices within one tap (16 | C), one block a tile, no L1 knob; the tile and the ring within the
// shared memory.
TEST(CudaConvEmulated, TensorCoreHaloRules) {
  const DType f16 = DType::kFloat16;
  // A 3x3 conv of c channels to k at 20x20 (or 40x40), and a halo config of it.
  const auto conv = [&](int64_t c, int64_t k, int64_t hw = 20) {
    return CudaConvTask::dense(ConvTask::make(1, c, hw, hw, k, 3, 1, 1, Activation::kSilu), f16,
                               f16);
  };
  const auto halo_cfg = [](const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk, int64_t wm,
                           int64_t wn) {
    return with_halo(
        TensorCoreConvTemplate::space(t).complete(ScheduleConfig(
            {{"bm", bm}, {"bn", bn}, {"bk", bk}, {"wm", wm}, {"wn", wn}, {"stages", 2}})),
        16);
  };
  const CudaConvTask t = conv(32, 64);
  const ScheduleConfig base = halo_cfg(t, 64, 64, 32, 32, 32);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, base));
  const auto valid_with = [](const CudaConvTask& task, ScheduleConfig c, const char* knob,
                             int64_t v) {
    c.set(knob, v);
    return TensorCoreConvTemplate::valid(task, c);
  };
  EXPECT_TRUE(valid_with(t, base, "bk", 64));      // a step spans two taps, a slice one
  EXPECT_FALSE(valid_with(t, base, "splitk", 2));  // one block a tile
  EXPECT_FALSE(valid_with(t, base, "l1", 1));      // the halo copies are not the im2col rows of l1
  EXPECT_TRUE(valid_with(t, base, "bm", 32));      // two rows of 16
  EXPECT_TRUE(valid_with(t, base, "halo", 8));
  // 24 channels: 16-byte copies, but a 16-deep slice would span two taps; 12 channels:
  // element-wise loads. Both take the im2col rows.
  for (int64_t c : {24, 12}) {
    const CudaConvTask narrow = conv(c, 16);
    const ScheduleConfig h = halo_cfg(narrow, 64, 16, 16, 32, 16);
    EXPECT_FALSE(TensorCoreConvTemplate::valid(narrow, h)) << c;
    EXPECT_TRUE(valid_with(narrow, h, "halo", 0)) << c;
  }
  // 256 channels of a 256-pixel tile: the halo tile alone (18 x 18 pixels x 264 halves) exceeds
  // the shared memory; a 64-pixel tile (6 x 18 pixels) fits.
  const CudaConvTask wide = conv(256, 64, 40);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(wide, halo_cfg(wide, 256, 64, 32, 64, 32)));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(wide, halo_cfg(wide, 64, 64, 32, 32, 32)));
}

// The tasks of the warpgroup MMA tests: halo_tasks() and element-wise loads with odd slices, a
// 1x1 to 80 channels, an NCHW output; for sm_90.
std::vector<CudaConvTask> warpgroup_tasks() {
  const DType f16 = DType::kFloat16;
  std::vector<CudaConvTask> all = halo_tasks();
  all.push_back(sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, Activation::kSilu, true), f16, f16,
                       {12, 0}, {21, 1}, {23, 3}));
  all.push_back(CudaConvTask::dense(ConvTask::make(2, 64, 5, 7, 80, 1, 1, 0), f16, f16));
  all.push_back(nchw_out(
      CudaConvTask::dense(ConvTask::make(2, 32, 6, 5, 48, 3, 1, 1, Activation::kSilu), f16, f16)));
  for (CudaConvTask& t : all) t.sm = 90;
  return all;
}

// Warpgroup MMA (wg=1, sm_90): B through wgmma's shared-memory descriptors (core matrices),
// A fragments from ldmatrix, a warp's rows 16 r + 64 mi. One and two warpgroups (along the pixels
// and along the channels), 1 to 4 m-tiles a warp, warp tiles of 16 to 80 channels, depth steps of
// 16 to 128, 2 to 4 stages (the emulation reads B when a wgmma completes, and reports a copy
// into its bytes before that); im2col rows (16-byte and element-wise) and halo tiles (steps within
// a tap, across taps, across a tap's end); staged and fragment epilogues, NCHW outputs, slices with
// a residual, fp16 / bf16 in and out, fp32 out, K not a multiple of the tile.
TEST(CudaConvEmulated, TensorCoreWarpgroupMma) {
  const std::vector<CudaConvTask> all = warpgroup_tasks();
  Variants variants;
  for (const auto& [halo, epi] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {16, 1}, {8, 0}})
    variants.push_back(
        [=](ScheduleConfig c) { return with_wg(with_halo(std::move(c), halo, epi)); });
  run_valid(all,
            {{{"bm", 64}, {"bn", 16}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 2}},
             {{"bm", 128}, {"bn", 32}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 3}},
             {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 16}, {"wn", 32}, {"stages", 2}},
             {{"bm", 128}, {"bn", 32}, {"bk", 64}, {"wm", 16}, {"wn", 32}, {"stages", 2}},
             {{"bm", 256}, {"bn", 16}, {"bk", 128}, {"wm", 64}, {"wn", 16}, {"stages", 2}},
             {{"bm", 64}, {"bn", 80}, {"bk", 32}, {"wm", 16}, {"wn", 80}, {"stages", 3}},
             {{"bm", 64}, {"bn", 48}, {"bk", 16}, {"wm", 16}, {"wn", 48}, {"stages", 4}}},
            variants, 3);
}

// Warpgroup MMA with A from shared memory too (wg=2): both tiles as swizzled rows (32B, 64B and
// 128B modes for steps of 16, 32 and 64), each step's wgmmas in flight while the next step is
// issued (the emulation reads A and B through their descriptors when a wgmma completes, and
// reports a copy into their bytes before that). The tasks of the test above (16-byte and
// element-wise loads, slices, NCHW and fp32 outputs, bf16), the image stem (NCHW fp32 input) and
// the YOLOv8 head's 144 channels; one and two warpgroups, 1 to 4 m-tiles, warp tiles of 16 to 144
// channels in one instruction, 3 and 4 stages, L1 copies, staged and fragment epilogues.
TEST(CudaConvEmulated, TensorCoreWarpgroupSharedA) {
  const DType f16 = DType::kFloat16;
  std::vector<CudaConvTask> all = warpgroup_tasks();
  CudaConvTask image =
      CudaConvTask::dense(ConvTask::make(2, 3, 11, 13, 16, 3, 2, 1, Activation::kSilu), f16, f16);
  image.in_nchw = true;
  all.push_back(image);
  all.push_back(CudaConvTask::dense(ConvTask::make(1, 64, 6, 5, 144, 1, 1, 0), f16, f16));
  for (CudaConvTask& t : all) t.sm = 90;
  Variants variants;
  for (const auto& [l1, epi] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 1}})
    variants.push_back([=](ScheduleConfig c) {
      c.set("l1", l1);
      c.set("epi", epi);
      return with_wg(std::move(c), 2);
    });
  variants.push_back([](ScheduleConfig c) { return with_wg(std::move(c), 2); });
  run_valid(all,
            {{{"bm", 64}, {"bn", 16}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 3}},
             {{"bm", 128}, {"bn", 32}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 4}},
             {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 16}, {"wn", 32}, {"stages", 3}},
             {{"bm", 256}, {"bn", 16}, {"bk", 128}, {"wm", 64}, {"wn", 16}, {"stages", 3}},
             {{"bm", 64}, {"bn", 80}, {"bk", 32}, {"wm", 16}, {"wn", 80}, {"stages", 3}},
             {{"bm", 64}, {"bn", 128}, {"bk", 64}, {"wm", 16}, {"wn", 128}, {"stages", 3}},
             {{"bm", 64}, {"bn", 144}, {"bk", 32}, {"wm", 16}, {"wn", 144}, {"stages", 4}}},
            variants, 3);
}

// wg=2 with A from halo tiles 8 pixels wide: the tile stored as swizzled slabs of 16, 32 or 64
// channels (32B, 64B and 128B modes), each m-tile's descriptor starting at its first pixel's row
// at each tap (stride 2 through the column phases, dilation 2). halo_tasks() (16 to 48 channels,
// edge tiles, slices, bf16, fp32 out, 1x1) and 64, 80 and 144 channels; one and two
// warpgroups, one and two m-tiles, depth steps of 16 to 64 (within a tap, across taps, past the
// depth), staged and fragment epilogues.
TEST(CudaConvEmulated, TensorCoreWarpgroupHaloA) {
  const DType f16 = DType::kFloat16;
  std::vector<CudaConvTask> all = halo_tasks();
  all.push_back(
      CudaConvTask::dense(ConvTask::make(1, 64, 9, 17, 32, 3, 1, 1, Activation::kSilu), f16, f16));
  all.push_back(
      CudaConvTask::dense(ConvTask::make(1, 80, 10, 8, 80, 3, 1, 1, Activation::kSilu), f16, f16));
  all.push_back(CudaConvTask::dense(ConvTask::make(1, 64, 12, 11, 144, 3, 2, 1, Activation::kSilu),
                                    f16, f16));
  for (CudaConvTask& t : all) t.sm = 90;
  Variants variants;
  for (int64_t epi : {0, 1})
    variants.push_back(
        [=](ScheduleConfig c) { return with_halo(with_wg(std::move(c), 2), 8, epi); });
  run_valid(all,
            {{{"bm", 64}, {"bn", 16}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 3}},
             {{"bm", 128}, {"bn", 32}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 4}},
             {{"bm", 128}, {"bn", 64}, {"bk", 64}, {"wm", 16}, {"wn", 64}, {"stages", 3}},
             {{"bm", 64}, {"bn", 80}, {"bk", 32}, {"wm", 16}, {"wn", 80}, {"stages", 3}},
             {{"bm", 128}, {"bn", 144}, {"bk", 32}, {"wm", 32}, {"wn", 144}, {"stages", 3}}},
            variants, 4);
}

// Rings of 5 and 6 stages (sm_90's 227 KiB of shared memory): mma.sync and wgmma, im2col rows and
// halo tiles, steps that wrap the ring at other than a power of two; with a register bound
// (minb), which changes nothing the emulation sees.
TEST(CudaConvEmulated, TensorCoreDeepRings) {
  const DType f16 = DType::kFloat16;
  std::vector<CudaConvTask> all = {
      CudaConvTask::dense(ConvTask::make(1, 64, 9, 17, 32, 3, 1, 1, Activation::kSilu), f16, f16),
      CudaConvTask::dense(ConvTask::make(1, 48, 10, 8, 80, 3, 2, 1, Activation::kSilu), f16, f16),
      CudaConvTask::dense(ConvTask::make(1, 96, 6, 5, 144, 1, 1, 0), f16, f16)};
  for (CudaConvTask& t : all) t.sm = 90;
  Variants variants;
  for (int64_t stages : {5, 6}) {
    variants.push_back([=](ScheduleConfig c) {
      c.set("stages", stages);
      c.set("minb", 2);
      return c;
    });
    variants.push_back([=](ScheduleConfig c) {
      c.set("stages", stages);
      return with_wg(std::move(c), 2);
    });
    variants.push_back([=](ScheduleConfig c) {
      c.set("stages", stages);
      return with_halo(with_wg(std::move(c), 2), 8, 1);
    });
  }
  run_valid(all,
            {{{"bm", 64}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 32}, {"stages", 5}},
             {{"bm", 128}, {"bn", 80}, {"bk", 32}, {"wm", 32}, {"wn", 80}, {"stages", 5}}},
            variants, 5);
}

// Shared memory within what the task's architecture allows a block (227 KiB on sm_90, 99 KiB on
// sm_86), and a register bound (minb) only where the accumulators and 32 more registers fit
// under it.
TEST(CudaConvEmulated, TensorCoreSharedMemoryAndRegisterBounds) {
  CudaConvTask t =
      CudaConvTask::dense(ConvTask::make(128, 64, 80, 80, 144, 3, 1, 1, Activation::kSilu),
                          DType::kFloat16, DType::kFloat16);
  t.sm = 90;
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  // The 64 -> 144 head conv with 64-deep steps in a ring of 6: 6 x 144 x 64 x 2 bytes of weights
  // alone, 108 KiB.
  const ScheduleConfig deep = with_halo(
      with_wg(space.complete(ScheduleConfig(
                  {{"bm", 128}, {"bn", 144}, {"bk", 64}, {"wm", 16}, {"wn", 144}, {"stages", 6}})),
              2),
      8, 1);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, deep)) << deep.str();
  EXPECT_GT(TensorCoreConvTemplate::emit(t, deep, "k").shared_bytes, kMaxSharedBytes);
  ScheduleConfig three = deep;
  three.set("stages", 3);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, three));
  // 8 warps of 16 x 144 (72 accumulators): 2 blocks leave 128 registers a thread, 3 leave 85,
  // 4 leave 64.
  for (const auto& [minb, ok] :
       std::vector<std::pair<int64_t, bool>>{{2, true}, {3, false}, {4, false}}) {
    ScheduleConfig c = three;
    c.set("minb", minb);
    EXPECT_EQ(TensorCoreConvTemplate::valid(t, c), ok) << c.str();
    if (ok) {
      EXPECT_NE(TensorCoreConvTemplate::emit(t, c, "k").source.find(
                    "YC_LAUNCH_BOUNDS_MIN(k_ns::THREADS, 2)"),
                std::string::npos);
    }
  }
  t.sm = 86;
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, deep));  // and no wgmma either
  // mma.sync on im2col rows, 32-deep steps: 6 stages of (128 + 144) rows of 40 halves, 128 KiB.
  ScheduleConfig sync = deep;
  sync.set("wg", 0);
  sync.set("bk", 32);
  sync.set("wm", 64);
  sync.set("wn", 48);
  sync.set("halo", 0);
  sync.set("epi", 0);
  t.sm = 90;
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, sync)) << sync.str();
  t.sm = 86;
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, sync)) << sync.str();
  sync.set("stages", 3);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, sync)) << sync.str();
}

// Persistent blocks (wg=2 on halo tiles 8 pixels wide): every depth step's weight tile loaded
// once, then tile after tile: one team with the next tile's halo copied into the other buffer
// while this one's wgmmas run (pers=1), or two teams of warps with a buffer each, synchronised by
// named barriers (pers=2). The emulation caps the grid at kPersistentBlocks blocks, so each
// block walks several tiles, edge tiles among them, and reports a copy into a halo buffer whose
// wgmmas have not completed. The tasks of TensorCoreWarpgroupHaloA; one and two warpgroups a
// team, depth steps of 16 to 64 (past the depth too), fragment and staged epilogues.
TEST(CudaConvEmulated, TensorCorePersistent) {
  const DType f16 = DType::kFloat16;
  // halo_tasks()' 16 channels (batch 2), stride 2 (bf16) and dilation 2 (fp32 out).
  const std::vector<CudaConvTask> halo = halo_tasks();
  std::vector<CudaConvTask> all(halo.begin(), halo.begin() + 3);
  all.push_back(
      CudaConvTask::dense(ConvTask::make(1, 64, 9, 17, 32, 3, 1, 1, Activation::kSilu), f16, f16));
  all.push_back(
      CudaConvTask::dense(ConvTask::make(1, 80, 20, 12, 80, 3, 1, 1, Activation::kSilu), f16, f16));
  all.push_back(CudaConvTask::dense(ConvTask::make(1, 64, 20, 12, 144, 3, 1, 1, Activation::kSilu),
                                    f16, f16));
  for (CudaConvTask& t : all) t.sm = 90;
  Variants variants;
  for (const auto& [pers, epi] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {1, 1}, {2, 0}}) {
    variants.push_back([=](ScheduleConfig c) {
      c = with_halo(with_wg(std::move(c), 2), 8, epi);
      c.set("pers", pers);
      return c;
    });
  }
  const std::vector<Shape> shapes = {
      {{"bm", 64}, {"bn", 16}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 3}},
      {{"bm", 128}, {"bn", 32}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 3}},
      {{"bm", 128}, {"bn", 64}, {"bk", 64}, {"wm", 16}, {"wn", 64}, {"stages", 3}},
      {{"bm", 64}, {"bn", 80}, {"bk", 32}, {"wm", 16}, {"wn", 80}, {"stages", 3}},
      {{"bm", 128}, {"bn", 144}, {"bk", 32}, {"wm", 32}, {"wn", 144}, {"stages", 3}}};
  // Every shape has a task with more tiles than the emulated grid's blocks.
  for (const Shape& v : shapes) {
    bool loops = false;
    for (const CudaConvTask& t : all) {
      const ScheduleConfig c =
          variants[0](TensorCoreConvTemplate::space(t).complete(ScheduleConfig(v)));
      if (!TensorCoreConvTemplate::valid(t, c)) continue;
      const CudaKernel k = TensorCoreConvTemplate::emit(t, c, "k");
      EXPECT_TRUE(k.persistent);
      loops = loops || k.grid[0] > EmulatedKernels::kPersistentBlocks;
    }
    EXPECT_TRUE(loops) << ScheduleConfig(v).str();
  }
  run_valid(all, shapes, variants, 4);
}

// What persistent blocks need: wg=2 on halo tiles 8 pixels wide, no b2b pair; the two halo buffers,
// every step's weight tile and a staged output tile within the block's shared memory.
TEST(CudaConvEmulated, TensorCorePersistentRules) {
  CudaConvTask t =
      CudaConvTask::dense(ConvTask::make(128, 64, 80, 80, 144, 3, 1, 1, Activation::kSilu),
                          DType::kFloat16, DType::kFloat16);
  t.sm = 90;
  ScheduleConfig c = with_halo(
      with_wg(TensorCoreConvTemplate::space(t).complete(ScheduleConfig(
                  {{"bm", 128}, {"bn", 144}, {"bk", 64}, {"wm", 16}, {"wn", 144}, {"stages", 3}})),
              2),
      8, 0);
  c.set("pers", 1);
  const auto valid_with = [&](const ScheduleConfig& base, const char* knob, int64_t v) {
    ScheduleConfig x = base;
    x.set(knob, v);
    return TensorCoreConvTemplate::valid(t, x);
  };
  // 2 halo buffers of 184 pixels x 64 channels, 9 steps of 144 x 64 weights: 212,992 bytes.
  ASSERT_TRUE(TensorCoreConvTemplate::valid(t, c)) << c.str();
  const CudaKernel k = TensorCoreConvTemplate::emit(t, c, "k");
  EXPECT_EQ(k.shared_bytes, 2u * 184 * 64 * 2 + 9u * 144 * 64 * 2);
  EXPECT_TRUE(k.persistent);
  EXPECT_EQ(k.grid[0], 128u * 10 * 5);    // every tile: the launch caps it
  EXPECT_FALSE(valid_with(c, "epi", 1));  // + 128 x 152 floats of staged output
  EXPECT_FALSE(valid_with(c, "halo", 0));
  EXPECT_FALSE(valid_with(c, "wg", 1));
  ScheduleConfig plain = c;
  plain.set("pers", 0);
  EXPECT_FALSE(TensorCoreConvTemplate::emit(t, plain, "k").persistent);
  // Two teams of 8 warps: the same shared memory (a halo buffer each), twice the threads, two
  // tiles a block; fragment epilogues only, and registers for the 72 accumulators + 32.
  ScheduleConfig teams = c;
  teams.set("pers", 2);
  ASSERT_TRUE(TensorCoreConvTemplate::valid(t, teams));
  const CudaKernel k2 = TensorCoreConvTemplate::emit(t, teams, "k");
  EXPECT_EQ(k2.shared_bytes, k.shared_bytes);
  EXPECT_EQ(k2.block[0], 2 * k.block[0]);
  EXPECT_EQ(k2.grid[0], k.grid[0] / 2);
  EXPECT_FALSE(valid_with(teams, "epi", 1));
  // 2 blocks of 512 threads leave 64 registers a thread, of 256 threads 128.
  EXPECT_FALSE(valid_with(teams, "minb", 2));
  EXPECT_TRUE(valid_with(c, "minb", 2));
  t.sm = 86;
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, c));
}

// wg=1: sm_90 only (wgmma is sm_90a's; later GPUs lack it), whole warpgroups of one column of warp
// tiles (bm a multiple of 4 wm), no split-K, no b2b pair.
TEST(CudaConvEmulated, TensorCoreWarpgroupRules) {
  // A 3x3 conv of c channels to k at 20x20, fp16, for sm_90.
  const auto conv90 = [](int64_t c, int64_t k) {
    CudaConvTask task =
        CudaConvTask::dense(ConvTask::make(1, c, 20, 20, k, 3, 1, 1, Activation::kSilu),
                            DType::kFloat16, DType::kFloat16);
    task.sm = 90;
    return task;
  };
  const CudaConvTask t = conv90(32, 64);
  const ScheduleConfig base = with_wg(TensorCoreConvTemplate::space(t).complete(ScheduleConfig(
      {{"bm", 128}, {"bn", 64}, {"bk", 32}, {"wm", 32}, {"wn", 64}, {"stages", 3}})));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, base));
  const auto valid_with = [&](CudaConvTask task, const char* knob, int64_t v) {
    ScheduleConfig c = base;
    c.set(knob, v);
    return TensorCoreConvTemplate::valid(task, c);
  };
  EXPECT_FALSE(valid_with(t, "splitk", 2));
  EXPECT_FALSE(valid_with(t, "wm", 64));  // 2 warps of 64 rows: half a warpgroup
  EXPECT_TRUE(valid_with(t, "wm", 16));   // 8 warps: two warpgroups
  EXPECT_TRUE(valid_with(t, "halo", 16));
  CudaConvTask other = t;
  for (int sm : {80, 89, 100}) {
    other.sm = sm;
    EXPECT_FALSE(valid_with(other, "wg", 1)) << sm;
    EXPECT_FALSE(valid_with(other, "wg", 2)) << sm;
    EXPECT_TRUE(valid_with(other, "wg", 0)) << sm;
  }
  // wg=2 (A from shared memory): im2col rows or halo tiles 8 pixels wide, 3+ stages; warp tiles
  // wider than 80 channels, and up to 144 accumulators a thread, are for it only.
  ScheduleConfig ss = base;
  ss.set("wg", 2);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, ss));
  ss.set("stages", 2);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, ss));
  ss.set("stages", 3);
  ss.set("halo", 16);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, ss));
  ss.set("halo", 8);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, ss));
  const CudaConvTask odd = conv90(24, 64);  // 8 | C but not 16 | C: no halo tiles
  EXPECT_FALSE(TensorCoreConvTemplate::valid(odd, ss));
  ss.set("halo", 0);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(odd, ss));
  {
    const CudaConvTask head = conv90(32, 144);
    const ScheduleConfig wide = TensorCoreConvTemplate::space(head).complete(ScheduleConfig(
        {{"bm", 128}, {"bn", 144}, {"bk", 32}, {"wm", 32}, {"wn", 144}, {"stages", 3}}));
    EXPECT_TRUE(TensorCoreConvTemplate::valid(head, with_wg(wide, 2)));  // 144 accumulators
    EXPECT_FALSE(TensorCoreConvTemplate::valid(head, with_wg(wide, 0)));
    ScheduleConfig wider = with_wg(wide, 2);
    wider.set("bm", 256);
    wider.set("wm", 64);  // 288
    EXPECT_FALSE(TensorCoreConvTemplate::valid(head, wider));
  }
  ss.set("splitk", 2);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, ss));
  ss.set("splitk", 1);
  ss.set("wm", 16);
  ss.set("wn", 128);
  ss.set("bn", 128);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(t, ss));
  ss.set("wg", 1);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, ss));
  ss.set("wg", 0);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(t, ss));
  CudaConvTask pair = with_b2b(t, 32, Activation::kSilu, {32, 0}, false, DType::kFloat16, 3);
  ScheduleConfig p = TensorCoreConvTemplate::default_config(pair);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(pair, p));
  p.set("wg", 1);
  EXPECT_FALSE(TensorCoreConvTemplate::valid(pair, p));
  p.set("wg", 2);  // a wgmma first stage (the second stays mma.sync), of whole warpgroups
  p.set("bm", 64);
  p.set("wm", 16);
  p.set("wn", p.get("bn"));
  p.set("stages", 3);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(pair, p)) << p.str();
  // The defaults and stored configs without the knob mean mma.sync.
  EXPECT_EQ(TensorCoreConvTemplate::default_config(t).get("wg"), 0);
  EXPECT_EQ(TensorCoreConvTemplate::space(t).complete(ScheduleConfig({{"bm", 64}})).get("wg"), 0);
  // A wg kernel is built for sm_90a: its source says so, and its wgmma instruction is there.
  const CudaKernel k = TensorCoreConvTemplate::emit(t, base, "kwg");
  EXPECT_NE(k.source.find("#define YC_ARCH_SPECIFIC 1"), std::string::npos);
  EXPECT_NE(k.source.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), std::string::npos);
  EXPECT_EQ(k.block[0], 128u);
  ScheduleConfig off = base;
  off.set("wg", 0);
  EXPECT_EQ(TensorCoreConvTemplate::emit(t, off, "k").source.find("YC_ARCH_SPECIFIC 1"),
            std::string::npos);
}

// epi=1 needs the staged fp32 tile to fit the pipeline ring and 16-byte aligned output and
// residual slices of an NHWC output; with an NCHW output it changes nothing (the fragment
// stores), so that an NHWC twin's config still applies.
TEST(CudaConvEmulated, TensorCoreStagedEpilogueValidity) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  const ConvTask conv = ConvTask::make(1, 16, 9, 9, 32, 3, 1, 1, Activation::kSilu, true);
  const auto cfg = [](int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t epi) {
    return ScheduleConfig({{"bm", bm},
                           {"bn", bn},
                           {"bk", bk},
                           {"wm", 32},
                           {"wn", 16},
                           {"stages", stages},
                           {"splitk", 1},
                           {"l1", 0},
                           {"epi", epi},
                           {"halo", 0},
                           {"wg", 0},
                           {"minb", 0},
                           {"pers", 0}});
  };
  const CudaConvTask dense = CudaConvTask::dense(conv, f16, f16);
  // 64 x (32 + 8) floats = 10240 bytes over a ring of 2 x (64 + 32) x (16 + 8) halves = 9216.
  EXPECT_TRUE(TensorCoreConvTemplate::valid(dense, cfg(64, 32, 16, 2, 0)));
  EXPECT_FALSE(TensorCoreConvTemplate::valid(dense, cfg(64, 32, 16, 2, 1)));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(dense, cfg(64, 32, 16, 3, 1)));  // 13824 bytes
  // Slices: 16 bytes are 8 halves or 4 floats.
  const ScheduleConfig staged = cfg(64, 32, 32, 2, 1);
  const auto valid = [&](DType out, ChannelSlice o, ChannelSlice r) {
    const CudaConvTask t = sliced(conv, f16, out, {16, 0}, o, r);
    EXPECT_TRUE(TensorCoreConvTemplate::matches(t)) << t.key();
    return TensorCoreConvTemplate::valid(t, staged);
  };
  EXPECT_TRUE(valid(f16, {48, 8}, {48, 16}));
  EXPECT_FALSE(valid(f16, {48, 4}, {48, 16}));
  EXPECT_FALSE(valid(f16, {44, 8}, {48, 16}));
  EXPECT_FALSE(valid(f16, {48, 8}, {44, 8}));
  EXPECT_FALSE(valid(f16, {48, 8}, {48, 12}));
  EXPECT_TRUE(valid(f32, {44, 4}, {36, 4}));
  EXPECT_FALSE(valid(f32, {44, 2}, {36, 4}));
  EXPECT_FALSE(valid(f32, {44, 4}, {38, 4}));
  // Without a residual its slice does not matter.
  ConvTask plain = conv;
  plain.residual = false;
  EXPECT_TRUE(
      TensorCoreConvTemplate::valid(sliced(plain, f16, f16, {16, 0}, {48, 8}, {36, 3}), staged));
  // l1=1 needs the 16-byte input copies: NHWC input, 8-aligned channels, stride and offset.
  const ScheduleConfig l1 = with_l1_epi(cfg(64, 32, 32, 2, 0), 1, 0);
  EXPECT_TRUE(TensorCoreConvTemplate::valid(sliced(conv, f16, f16, {24, 8}, {32, 0}, {32, 0}), l1));
  EXPECT_FALSE(
      TensorCoreConvTemplate::valid(sliced(conv, f16, f16, {20, 4}, {32, 0}, {32, 0}), l1));
  EXPECT_FALSE(TensorCoreConvTemplate::valid(
      CudaConvTask::dense(ConvTask::make(1, 12, 9, 9, 32, 3, 1, 1), f16, f16), l1));
  CudaConvTask image = CudaConvTask::dense(ConvTask::make(1, 16, 9, 9, 32, 3, 1, 1), f16, f16);
  image.in_nchw = true;
  EXPECT_FALSE(TensorCoreConvTemplate::valid(image, l1));
  EXPECT_TRUE(TensorCoreConvTemplate::valid(image, with_l1_epi(l1, 0, 0)));
  // NCHW: valid with odd slices, and the same kernel as epi=0 (but for the config comment).
  const CudaConvTask nchw = nchw_out(sliced(conv, f16, f16, {16, 0}, {47, 3}, {45, 1}));
  ASSERT_TRUE(TensorCoreConvTemplate::valid(nchw, staged));
  const auto body = [&](int64_t epi) {
    const std::string src = TensorCoreConvTemplate::emit(nchw, cfg(64, 32, 32, 2, epi), "k").source;
    return src.substr(src.find("namespace k_ns"));
  };
  EXPECT_EQ(body(1), body(0));
  EXPECT_NE(body(0).find("EPI = 0,"), std::string::npos);
}

// Records tuned before the knobs splitk, l1, epi, halo and wg existed (two lines of the shipped
// records/cuda-sm_90.jsonl) lack them: read through the space (Knob::absent) they mean
// splitk=1, l1=0, epi=0, halo=0, wg=0, are valid, and give the kernel of those values set
// explicitly.
TEST(CudaConvEmulated, TensorCoreRecordsWithoutTheNewKnobs) {
  const DType f16 = DType::kFloat16;
  const Activation silu = Activation::kSilu;
  const std::pair<const char*, CudaConvTask> cases[] = {
      {R"({"batch":1,"clock":"wall","config":{"bk":32,"bm":64,"bn":128,"stages":3,"wm":64,"wn")"
       R"(:32},"error":"","flops":1061683200.0,"format":1,"key":"cuda_conv2d_nhwc f16->f16 n1 )"
       R"(c64 h80 w80 k144 3x3 s1x1 p1x1 d1x1 silu in64+0 out144+0","median":1.822355555163489)"
       R"(2e-05,"mode":"kernel","target":{"arch":"sm_90","device":"NVIDIA H200","device_id":0,)"
       R"("kind":"cuda"},"template":"tc_conv","threads":1,"time":"2026-11-30T08:31:02Z","times)"
       R"(":[1.8217333488994173e-05,1.8235999676916338e-05,1.8222222725550333e-05,1.8223555551)"
       R"(634892e-05,1.8254222141371834e-05],"tool":"0.1.0"})",
       CudaConvTask::dense(ConvTask::make(1, 64, 80, 80, 144, 3, 1, 1, silu), f16, f16)},
      {R"({"batch":1,"clock":"wall","config":{"bk":32,"bm":32,"bn":32,"stages":3,"wm":16,"wn":)"
       R"(32},"error":"","flops":117964800.0,"format":1,"key":"cuda_conv2d_nhwc f16->f16 n1 c3)"
       R"(2 h80 w80 k32 3x3 s1x1 p1x1 d1x1 silu add in32+0 out128+64 res128+32","median":9.708)"
       R"(03707017811e-06,"mode":"kernel","target":{"arch":"sm_90","device":"NVIDIA H200","dev)"
       R"(ice_id":0,"kind":"cuda"},"template":"tc_conv","threads":1,"time":"2026-11-30T08:31:2)"
       R"(3Z","times":[9.707449773036012e-06,9.700110199254587e-06,9.70803707017811e-06,9.7194)"
       R"(86630291022e-06,9.725651609788246e-06],"tool":"0.1.0"})",
       sliced(ConvTask::make(1, 32, 80, 80, 32, 3, 1, 1, silu, true), f16, f16, {32, 0}, {128, 64},
              {128, 32})}};
  for (const auto& [line, t] : cases) {
    const tuner::Record r = tuner::record_from_json(nlohmann::json::parse(line));
    ASSERT_EQ(r.key, t.key());
    const ScheduleSpace space = TensorCoreConvTemplate::space(t);
    EXPECT_FALSE(r.config.in_space(space));  // as stored
    const ScheduleConfig read = space.complete(r.config);
    ASSERT_TRUE(TensorCoreConvTemplate::valid(t, read)) << read.str();
    ScheduleConfig explicit_zero = with_l1_epi(r.config, 0, 0);
    explicit_zero.set("splitk", 1);
    EXPECT_EQ(read, explicit_zero);
    const CudaKernel a = TensorCoreConvTemplate::emit(t, read, "k");
    const CudaKernel b = TensorCoreConvTemplate::emit(t, explicit_zero, "k");
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.grid, b.grid);
    EXPECT_EQ(a.block, b.block);
    EXPECT_EQ(a.shared_bytes, b.shared_bytes);
    EXPECT_NE(a.source.find("L1 = 0,"), std::string::npos);
    EXPECT_NE(a.source.find("EPI = 0,"), std::string::npos);
    EXPECT_NE(a.source.find("HALO = 0,"), std::string::npos);
    EXPECT_NE(a.source.find("WG = 0,"), std::string::npos);
    // The default stays at l1=0, epi=0 until the knobs are measured.
    EXPECT_EQ(TensorCoreConvTemplate::default_config(t).get("l1"), 0);
    EXPECT_EQ(TensorCoreConvTemplate::default_config(t).get("epi"), 0);
  }
}

// The upsampled copy (the nearest Resize a conv's output feeds, fused away): 2x2 into a concat
// slice whose stride and offset keep 16-byte pieces (the vector stores), 2x2 into odd slices
// (element-wise stores) with a residual and a lone last channel, 3x1 with an fp32 output; each
// compared with the reference's output upsampled, both buffers' bytes outside the slices intact.
std::vector<CudaConvTask> up_tasks(DType dtype) {
  const DType out = dtype == DType::kFloat32 ? dtype : DType::kFloat16;
  return {
      with_up(sliced(ConvTask::make(2, 32, 5, 7, 24, 1, 1, 0, Activation::kSilu), dtype, out,
                     {32, 0}, {40, 8}, {24, 0}),
              2, 2, {56, 16}),
      with_up(sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, Activation::kSilu, true), dtype, out,
                     {12, 0}, {21, 1}, {23, 3}),
              2, 2, {25, 5}),
      with_up(CudaConvTask::dense(ConvTask::make(1, 16, 6, 5, 32, 3, 1, 1, Activation::kRelu),
                                  dtype, DType::kFloat32),
              3, 1, {48, 16})};
}

TEST(CudaConvEmulated, TensorCoreUpsampledCopyFp16) {
  const std::vector<CudaConvTask> all = up_tasks(DType::kFloat16);
  // The staged epilogue (epi=1) is among the configs of the aligned task.
  int64_t epi = 0;
  for (const ScheduleConfig& c : tc_configs(all[0])) epi += c.get("epi");
  EXPECT_GE(epi, 2);
  run(Template::kTensorCore, all);
}

TEST(CudaConvEmulated, TensorCoreUpsampledCopySplitK) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> cases;
  for (CudaConvTask t : up_tasks(DType::kFloat16)) {
    t.sm = 90;
    for (int64_t s : {2, 4}) {
      ScheduleConfig cfg = TensorCoreConvTemplate::space(t).complete(ScheduleConfig(
          {{"bm", 32}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 3}}));
      cfg.set("splitk", s);
      if (TensorCoreConvTemplate::valid(t, cfg)) cases.emplace_back(t, cfg);
    }
  }
  EXPECT_GE(cases.size(), 4u);
  run_configs(Template::kTensorCore, cases);
}

TEST(CudaConvEmulated, SimtUpsampledCopyFp32) { run(Template::kSimt, up_tasks(DType::kFloat32)); }

// The direct template: the image stem and an NHWC input of 4 channels (FMA with fp32, MMA with
// fp16), each with an upsampled copy into a concat slice.
TEST(CudaConvEmulated, DirectUpsampledCopy) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  CudaConvTask image = CudaConvTask::dense(
      ConvTask::make(2, 3, 13, 11, 16, 3, 2, 1, Activation::kSilu), f16, f16);
  image.in_nchw = true;
  run(Template::kDirect,
      {with_up(image, 2, 2, {24, 8}),
       with_up(sliced(ConvTask::make(1, 4, 9, 10, 19, 3, 1, 1, Activation::kRelu, true), f32, f32,
                      {4, 0}, {21, 1}, {19, 0}),
               2, 2, {23, 3})});
}

// The copy is a workload of its own (" up<sh>x<sw> out<stride>+<offset>" in the key) whose records
// fall back to the conv's without it (nhwc_output_twin), also with a template's suffix after it;
// an NCHW output takes none.
TEST(CudaConvEmulated, UpsampledCopyKeyAndValidity) {
  const DType f16 = DType::kFloat16;
  const CudaConvTask plain =
      CudaConvTask::dense(ConvTask::make(1, 64, 20, 20, 64, 1, 1, 0), f16, f16);
  const CudaConvTask up = with_up(plain, 2, 2, {128, 64});
  EXPECT_EQ(up.key(), plain.key() + " up2x2 out128+64");
  EXPECT_EQ(nhwc_output_twin(up.key()), plain.key());
  EXPECT_EQ(nhwc_output_twin(up.key() + " direct"), plain.key() + " direct");
  EXPECT_EQ(nhwc_output_twin(plain.key()), std::nullopt);
  EXPECT_TRUE(TensorCoreConvTemplate::matches(up));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(nchw_out(up)));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up(plain, 2, 2, {100, 64})));  // 64 + 64 > 100
  EXPECT_FALSE(TensorCoreConvTemplate::matches(with_up(plain, 0, 2, {128, 64})));
  // Without a copy the kernel stores nothing more (UP = 0); the default config is the same.
  EXPECT_NE(TensorCoreConvTemplate::emit(plain, TensorCoreConvTemplate::default_config(plain), "k")
                .source.find("UP = 0,"),
            std::string::npos);
  EXPECT_EQ(TensorCoreConvTemplate::default_config(up),
            TensorCoreConvTemplate::default_config(plain));
}

TEST(CudaConvEmulated, SimtFp32) { run(Template::kSimt, tasks(DType::kFloat32)); }

// Output and residual stored NCHW (the detect head's last convs): every task above so, plus 1x1
// and 3x3 convs at batch 2 over 35 and 30 pixels, so that pixel tiles span two images, the 3x3
// one with a residual and channel slices of its output and residual.
std::vector<CudaConvTask> nchw_tasks(DType dtype) {
  const DType f32 = DType::kFloat32, out = dtype == f32 ? f32 : DType::kFloat16;
  std::vector<CudaConvTask> all;
  for (const CudaConvTask& t : tasks(dtype)) all.push_back(nchw_out(t));
  all.push_back(
      nchw_out(CudaConvTask::dense(ConvTask::make(2, 32, 5, 7, 24, 1, 1, 0), dtype, out)));
  all.push_back(nchw_out(sliced(ConvTask::make(2, 16, 6, 5, 20, 3, 1, 1, Activation::kSilu, true),
                                dtype, f32, {16, 0}, {48, 16}, {40, 8})));
  return all;
}

TEST(CudaConvEmulated, TensorCoreNchwOutputFp16) {
  run(Template::kTensorCore, nchw_tasks(DType::kFloat16));
}

TEST(CudaConvEmulated, TensorCoreNchwOutputBf16) {
  const std::vector<CudaConvTask> all = nchw_tasks(DType::kBFloat16);
  run(Template::kTensorCore, {all[1], all[3], all[6], all[7]});
}

TEST(CudaConvEmulated, SimtNchwOutputFp32) { run(Template::kSimt, nchw_tasks(DType::kFloat32)); }

// The NCHW output is a workload of its own for the tuner: same shapes, another key.
TEST(CudaConvEmulated, NchwOutputHasItsOwnKey) {
  const CudaConvTask t = CudaConvTask::dense(ConvTask::make(1, 64, 80, 80, 64, 1, 1, 0),
                                             DType::kFloat16, DType::kFloat16);
  EXPECT_EQ(nchw_out(t).key(), t.key() + " out-nchw");
}

// A task reading the NCHW float32 image.
CudaConvTask image_task(const ConvTask& conv, DType dtype, DType out_dtype) {
  CudaConvTask t = CudaConvTask::dense(conv, dtype, out_dtype);
  t.in_nchw = true;
  return t;
}

// The first conv of YOLOv8 (3x3 s2 p1) and of YOLOv5 (6x6 s2 p2) on the image, batch 2, sizes
// that leave partial tiles.
TEST(CudaConvEmulated, DirectImageStems) {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  const Activation silu = Activation::kSilu;
  const CudaConvTask v8 = image_task(ConvTask::make(2, 3, 37, 45, 16, 3, 2, 1, silu), f16, f16);
  const CudaConvTask v5 = image_task(ConvTask::make(2, 3, 64, 64, 32, 6, 2, 2, silu), bf16, bf16);
  EXPECT_FALSE(SimtConvTemplate::matches(v8));
  run(Template::kDirect, {v8, v5});
}

// The image as float16 / bfloat16 (compile --io-precision): the direct template reads it as
// stored; the tensor-core and stem-pair templates gather float32 images only. Its own key.
TEST(CudaConvEmulated, DirectNarrowImageStems) {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  const Activation silu = Activation::kSilu;
  CudaConvTask v8 = image_task(ConvTask::make(2, 3, 37, 45, 16, 3, 2, 1, silu), f16, f16);
  CudaConvTask v5 = image_task(ConvTask::make(2, 3, 64, 64, 32, 6, 2, 2, silu), bf16, bf16);
  const std::string f32_key = v8.key();
  v8.image_dtype = f16;
  v5.image_dtype = bf16;
  EXPECT_EQ(f32_key.substr(f32_key.size() - 12), " in-nchw-f32");
  EXPECT_EQ(v8.key(), f32_key.substr(0, f32_key.size() - 3) + "f16");
  EXPECT_TRUE(DirectConvTemplate::matches(v8));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(v8));
  run(Template::kDirect, {v8, v5});
}

// The pairs path (knob pairs): the 16-bit image's rows copied as stored, in 16-byte pieces, its
// depth in pairs of adjacent columns. YOLOv8's stem (3x3, padding 1: pairs from column -1) and
// YOLOv5's (6x6, padding 2: from column 0), images 8k wide (the pieces' rule) with rows and
// columns past the tiles, batch 2; fp16 and bf16.
TEST(CudaConvEmulated, DirectPairsStems) {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  const Activation silu = Activation::kSilu;
  CudaConvTask v8 = image_task(ConvTask::make(2, 3, 37, 48, 16, 3, 2, 1, silu), f16, f16);
  CudaConvTask v5 = image_task(ConvTask::make(2, 3, 30, 72, 32, 6, 2, 2, silu), bf16, bf16);
  v8.image_dtype = f16;
  v5.image_dtype = bf16;
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  for (const CudaConvTask& t : {v8, v5}) {
    int pairs = 0;
    for (const ScheduleConfig& c : direct_configs(t)) {
      if (c.get("pairs") != 1) continue;
      todo.emplace_back(t, c);
      ++pairs;
    }
    EXPECT_GE(pairs, 3) << t.key();
  }
  run_configs(Template::kDirect, todo);
  // Not for a float32 image, one of another 16-bit type, a width that is no multiple of 8, or
  // stride 1.
  ScheduleConfig c = DirectConvTemplate::default_config(v8);
  c.set("pairs", 1);
  EXPECT_TRUE(DirectConvTemplate::valid(v8, c));
  CudaConvTask other = v8;
  other.image_dtype = DType::kFloat32;
  EXPECT_FALSE(DirectConvTemplate::valid(other, c));
  other.image_dtype = bf16;
  EXPECT_FALSE(DirectConvTemplate::valid(other, c));
  other = image_task(ConvTask::make(2, 3, 37, 45, 16, 3, 2, 1, silu), f16, f16);
  other.image_dtype = f16;
  EXPECT_FALSE(DirectConvTemplate::valid(other, c));
  other = image_task(ConvTask::make(2, 3, 37, 48, 16, 3, 1, 1, silu), f16, f16);
  other.image_dtype = f16;
  EXPECT_FALSE(DirectConvTemplate::valid(other, c));
}

// The image input with the rest of the epilogue: stride 1, K = 48 (two channel blocks of 32, or
// three of 16), ReLU, a residual and an output slice; fp32 all through (the fp32 precision's
// first conv); no padding with stride 2.
TEST(CudaConvEmulated, DirectImageEpilogues) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  run(Template::kDirect,
      {[&] {
         CudaConvTask t = image_task(
             ConvTask::make(2, 3, 37, 45, 48, 3, 1, 1, Activation::kRelu, true), f16, f16);
         t.out = {56, 8};
         t.res = {48, 0};
         return t;
       }(),
       image_task(ConvTask::make(2, 3, 37, 45, 16, 3, 2, 1, Activation::kSilu), f32, f32),
       image_task(ConvTask::make(1, 3, 64, 64, 32, 3, 2, 0, Activation::kSilu), f16, f32)});
}

// NHWC inputs of at most 4 channels: an fp16 slice of a wider buffer with K = 19 (partial vectors:
// the pair and single-channel stores) into an odd output slice; 4 fp32 channels with a dilated
// 5x5 window; a 1x1 bf16 conv of one channel; stride 3 (a column phase layout of three phases).
TEST(CudaConvEmulated, DirectNhwcInputs) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32, bf16 = DType::kBFloat16;
  ConvTask stride3 = ConvTask::make(1, 2, 23, 29, 16, 4, 3, 1, Activation::kSilu);
  run(Template::kDirect,
      {sliced(ConvTask::make(2, 3, 21, 19, 19, 3, 2, 0, Activation::kSilu, true), f16, f16, {8, 2},
              {21, 1}, {19, 0}),
       CudaConvTask::dense(dilated(1, 4, 20, 18, 8, 5, 2, 4, Activation::kNone), f32, f32),
       CudaConvTask::dense(ConvTask::make(1, 1, 9, 40, 24, 1, 1, 0, Activation::kRelu), bf16, bf16),
       CudaConvTask::dense(stride3, f16, f16)});
}

// The template's limits: few input channels, groups 1, a bounded window; its defaults are valid
// over the shapes it takes (so every such conv compiles without a tuning record).
TEST(CudaConvEmulated, DirectMatchesAndDefaults) {
  const DType f16 = DType::kFloat16;
  EXPECT_FALSE(DirectConvTemplate::matches(
      CudaConvTask::dense(ConvTask::make(1, 5, 8, 8, 16, 3, 1, 1), f16, f16)));
  ConvTask grouped = ConvTask::make(1, 4, 8, 8, 4, 3, 1, 1);
  grouped.groups = 4;
  EXPECT_FALSE(DirectConvTemplate::matches(CudaConvTask::dense(grouped, f16, f16)));
  EXPECT_FALSE(DirectConvTemplate::matches(
      CudaConvTask::dense(ConvTask::make(1, 3, 64, 64, 16, 3, 8, 1), f16, f16)));
  CudaConvTask sliced_image = image_task(ConvTask::make(1, 3, 8, 8, 16, 3, 1, 1), f16, f16);
  sliced_image.in = {6, 3};  // an NCHW input is read densely
  EXPECT_FALSE(DirectConvTemplate::matches(sliced_image));
  int checked = 0;
  for (DType dt : {DType::kFloat16, DType::kFloat32})  // the MMA and the FMA path
    for (int64_t c : {1, 3, 4})
      for (int64_t k : {1, 3, 16, 19, 48, 64, 80, 256})
        for (int64_t kernel : {1, 3, 6, 7, 16})
          for (int64_t stride : {1, 2, 4})
            for (int64_t hw : {1, 7, 80, 640}) {
              const int64_t pad = kernel / 2;
              if (hw + 2 * pad < kernel || c * kernel * kernel > 256) continue;
              const CudaConvTask t = image_task(
                  ConvTask::make(1, c, hw, hw, k, kernel, stride, pad, Activation::kSilu), dt, dt);
              ASSERT_TRUE(DirectConvTemplate::matches(t)) << t.key();
              const ScheduleConfig cfg = DirectConvTemplate::default_config(t);
              EXPECT_TRUE(DirectConvTemplate::valid(t, cfg)) << t.key() << " " << cfg.str();
              ++checked;
            }
  EXPECT_GT(checked, 1800);
}

// Depthwise convs (YOLOX's DWConv and others) over every path of the depthwise template: 16-byte
// and element input loads (C not a multiple of the vector, odd slices), stride 2, a 5x5 window,
// dilation, residual, channel slices, NCHW output, fp16 / bf16 / fp32, batch 2, against the
// reference executor's grouped Conv, each with dw_configs.
TEST(CudaConvEmulated, DepthwiseConvs) {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16, f32 = DType::kFloat32;
  const Activation silu = Activation::kSilu;
  const std::vector<CudaConvTask> tasks = {
      CudaConvTask::dense(depthwise(ConvTask::make(2, 32, 7, 9, 32, 3, 1, 1, silu)), f16, f16),
      CudaConvTask::dense(depthwise(ConvTask::make(1, 24, 9, 8, 24, 3, 2, 1, silu)), f16, f16),
      sliced(depthwise(ConvTask::make(1, 12, 6, 7, 12, 3, 1, 1, silu, true)), f16, f16, {20, 4},
             {40, 8}, {12, 0}),
      CudaConvTask::dense(depthwise(ConvTask::make(1, 16, 8, 8, 16, 5, 1, 2, Activation::kRelu)),
                          bf16, bf16),
      CudaConvTask::dense(depthwise(dilated(1, 16, 9, 9, 16, 3, 2, 2, Activation::kNone)), f32,
                          f32),
      CudaConvTask::dense(depthwise(ConvTask::make(1, 7, 5, 6, 7, 3, 1, 1, silu)), f16, f32),
      nchw_out(sliced(depthwise(ConvTask::make(1, 16, 5, 6, 16, 3, 1, 1, silu, true)), f16, f16,
                      {16, 0}, {24, 8}, {16, 0}))};
  size_t configs = 0;
  for (const CudaConvTask& t : tasks) configs += dw_configs(t).size();
  EXPECT_GE(configs, 28u);
  run(Template::kDepthwise, tasks);
}

// What the depthwise template takes: groups == C == K only (not a channel multiplier, not groups
// 1, which the other templates take, nor the NCHW image); its default config is valid and uses
// 16-byte vectors where the slices allow; the key names the groups.
TEST(CudaConvEmulated, DepthwiseMatchesAndDefaults) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  const CudaConvTask dw =
      CudaConvTask::dense(depthwise(ConvTask::make(1, 64, 52, 52, 64, 3, 2, 1)), f16, f16);
  EXPECT_TRUE(DwConvTemplate::matches(dw));
  EXPECT_FALSE(TensorCoreConvTemplate::matches(dw));
  EXPECT_NE(dw.key().find(" g64 "), std::string::npos) << dw.key();
  ConvTask multiplier = ConvTask::make(1, 32, 8, 8, 64, 3, 1, 1);
  multiplier.groups = 32;
  EXPECT_FALSE(DwConvTemplate::matches(CudaConvTask::dense(multiplier, f16, f16)));
  EXPECT_FALSE(DwConvTemplate::matches(
      CudaConvTask::dense(ConvTask::make(1, 32, 8, 8, 32, 3, 1, 1), f16, f16)));
  CudaConvTask image = dw;
  image.in_nchw = true;
  EXPECT_FALSE(DwConvTemplate::matches(image));
  const ScheduleConfig def = DwConvTemplate::default_config(dw);
  EXPECT_TRUE(DwConvTemplate::valid(dw, def));
  EXPECT_EQ(def.get("vec"), 8) << def.str();
  EXPECT_EQ(
      DwConvTemplate::default_config(
          CudaConvTask::dense(depthwise(ConvTask::make(1, 64, 52, 52, 64, 3, 1, 1)), f32, f32))
          .get("vec"),
      4);
  // An input slice at an odd offset: no vectors.
  const CudaConvTask odd = sliced(depthwise(ConvTask::make(1, 16, 8, 8, 16, 3, 1, 1)), f16, f16,
                                  {24, 3}, {16, 0}, {16, 0});
  EXPECT_EQ(DwConvTemplate::default_config(odd).get("vec"), 1);
  // Too many registers: 8 channels of 8 pixels of a 7-wide window (8 * (8 + 7 + 1) > 96).
  const CudaConvTask wide =
      CudaConvTask::dense(depthwise(ConvTask::make(1, 64, 20, 20, 64, 7, 1, 3)), f16, f16);
  EXPECT_FALSE(
      DwConvTemplate::valid(wide, ScheduleConfig({{"vec", 8}, {"px", 8}, {"threads", 128}})));
  EXPECT_TRUE(DwConvTemplate::valid(wide, DwConvTemplate::default_config(wide)));
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
