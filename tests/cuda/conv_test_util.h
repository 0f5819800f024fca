#pragma once
/// What the CUDA conv tests share (the host emulation and the GPU tests): random operands of a
/// task, the reference output from the reference executor on a one-node-chain graph, the NHWC
/// (or, for an NCHW output and residual, NCHW) slice buffers the kernels read and write, the
/// comparison with per-dtype tolerances, and the configs each template is tested with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../unit/graph_builder.h"
#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/direct_conv_template.h"
#include "codegen/cuda/dw_conv_template.h"
#include "codegen/cuda/simt_conv_template.h"
#include "codegen/cuda/tc_conv_template.h"

namespace yoloc::codegen::cuda::testing {

/// Allowed |got - want| / max(1, |want|): the fp32 path is exact up to summation order; a 16-bit
/// output carries its rounding (2^-11 for fp16, 2^-8 for bf16) plus fp16/bf16 inputs.
inline double tolerance(const CudaConvTask& t) {
  return t.dtype == DType::kFloat32 && t.out_dtype == DType::kFloat32 ? 1e-4 : 1e-2;
}

/// A float32 tensor rounded to the precision of dtype (still float32).
inline Tensor rounded_to(const Tensor& t, DType dtype) {
  return dtype == DType::kFloat32 ? t.clone() : t.cast(dtype).cast(DType::kFloat32);
}

/// The operands of one task (NCHW / OIHW float32, rounded to the task's dtypes so the reference
/// sees what the kernel sees) and the reference output (NCHW float32).
struct ConvOperands {
  Tensor x, w, b, res, want;
};

/// Conv (+ Relu / SiLU) (+ Add) through the reference executor.
inline Tensor reference_conv(const ConvTask& t, const Tensor& x, const Tensor& w, const Tensor& b,
                             const Tensor& res) {
  Graph g;
  Value* xin = yoloc::testing::input(g, "x", {t.n, t.c, t.h, t.w});
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{t.kh, t.kw});
  a.set("strides", std::vector<int64_t>{t.sh, t.sw});
  a.set("pads", std::vector<int64_t>{t.ph, t.pw, t.ph, t.pw});
  a.set("dilations", std::vector<int64_t>{t.dh, t.dw});
  if (t.groups != 1) a.set("group", t.groups);
  Value* y =
      yoloc::testing::node(g, "Conv", {xin, g.add_constant("w", w), g.add_constant("b", b)}, a);
  if (t.act == Activation::kRelu) y = yoloc::testing::node(g, "Relu", {y});
  if (t.act == Activation::kSilu) y = yoloc::testing::node(g, "SiLU", {y});
  std::map<std::string, Tensor> feeds = {{"x", x}};
  if (t.residual) {
    Value* r = yoloc::testing::input(g, "res", {t.n, t.k, t.oh, t.ow});
    y = yoloc::testing::node(g, "Add", {y, r});
    feeds["res"] = res;
  }
  g.outputs = {y};
  return run_reference(g, feeds).at(0).tensor;
}

/// Element `element` of a buffer of float32, float16 or bfloat16 values, as float.
inline float stored_element(const std::vector<uint8_t>& y, size_t element, DType dt) {
  if (dt == DType::kFloat32) {
    float v;
    std::memcpy(&v, &y[element * 4], 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, &y[element * 2], 2);
  if (dt == DType::kFloat16) return static_cast<float>(Half::from_bits(bits));
  BFloat16 bf;
  bf.bits = bits;
  return static_cast<float>(bf);
}

/// Counts into `bad` the elements of y (es bytes each) that `mine` does not mark and that are not
/// all `fill` bytes any more (written where nothing should be), naming the first in `first` if
/// it is the first bad one.
inline void count_written_outside(const std::vector<uint8_t>& y, const std::vector<bool>& mine,
                                  size_t es, uint8_t fill, int& bad, std::string& first) {
  for (size_t e = 0; e < mine.size(); ++e) {
    if (mine[e]) continue;
    for (size_t b = 0; b < es; ++b)
      if (y[e * es + b] != fill && bad++ == 0) first = "element " + std::to_string(e) + " written";
  }
}

inline ConvOperands make_operands(const CudaConvTask& task, uint32_t seed) {
  const ConvTask& t = task.conv;
  // Weights scaled so outputs stay of order one at any depth (a group reads C / groups channels).
  const int64_t cg = t.c / t.groups;
  const float ws = 1.7f / std::sqrt(static_cast<float>(cg * t.kh * t.kw));
  ConvOperands o;
  o.x = rounded_to(yoloc::testing::random_tensor({t.n, t.c, t.h, t.w}, seed), task.dtype);
  if (task.in_nchw) o.x = rounded_to(o.x, task.image_dtype);  // the image as stored
  o.w = rounded_to(yoloc::testing::random_tensor({t.k, cg, t.kh, t.kw}, seed + 1, -ws, ws),
                   task.dtype);
  o.b = yoloc::testing::random_tensor({t.k}, seed + 2, -0.5f, 0.5f);
  o.res =
      rounded_to(yoloc::testing::random_tensor({t.n, t.k, t.oh, t.ow}, seed + 3), task.out_dtype);
  o.want = reference_conv(t, o.x, o.w, o.b, o.res);
  return o;
}

/// Element of image b, channel ch (of the buffer), pixel p in a buffer of `stride` channels of hw
/// pixels: NHWC, or NCHW when `planes`.
inline int64_t buffer_element(int64_t b, int64_t ch, int64_t p, int64_t stride, int64_t hw,
                              bool planes) {
  return planes ? (b * stride + ch) * hw + p : (b * hw + p) * stride + ch;
}

/// An NCHW float32 tensor stored as dtype in channel slice s of an NHWC buffer (an NCHW buffer
/// when `planes`); the channels of the buffer outside the slice hold `fill` bytes.
inline std::vector<uint8_t> to_nhwc_buffer(const Tensor& nchw, DType dtype, ChannelSlice s,
                                           uint8_t fill, bool planes = false) {
  const int64_t n = nchw.dim(0), c = nchw.dim(1), hw = nchw.dim(2) * nchw.dim(3);
  const size_t es = dtype_size(dtype);
  std::vector<uint8_t> buf(static_cast<size_t>(n * hw * s.stride) * es, fill);
  const Tensor cast = nchw.cast(dtype);
  const auto* src = static_cast<const uint8_t*>(cast.raw());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t from = (b * c + ch) * hw + p;
        const int64_t to = buffer_element(b, s.offset + ch, p, s.stride, hw, planes);
        std::memcpy(&buf[static_cast<size_t>(to) * es], src + static_cast<size_t>(from) * es, es);
      }
  return buf;
}

/// Compares the kernel's output buffer (NHWC or, for task.out_nchw, NCHW; out_dtype; the task's
/// output slice) with the reference, and checks that the bytes outside the slice still hold
/// `fill`.
inline ::testing::AssertionResult check_output(const CudaConvTask& task,
                                               const std::vector<uint8_t>& y, const Tensor& want,
                                               uint8_t fill) {
  const ConvTask& t = task.conv;
  const int64_t hw = t.oh * t.ow;
  const size_t es = dtype_size(task.out_dtype);
  if (y.size() != static_cast<size_t>(t.n * hw * task.out.stride) * es) {
    return ::testing::AssertionFailure() << "output buffer of " << y.size() << " bytes";
  }
  const double tol = tolerance(task);
  const float* ref = want.data<float>();
  int bad = 0;
  double worst = 0;
  std::string first;
  for (int64_t b = 0; b < t.n; ++b)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t ch = 0; ch < task.out.stride; ++ch) {
        const size_t at =
            static_cast<size_t>(buffer_element(b, ch, p, task.out.stride, hw, task.out_nchw)) * es;
        const int64_t k = ch - task.out.offset;
        if (k < 0 || k >= t.k) {
          for (size_t i = 0; i < es; ++i) {
            if (y[at + i] != fill && bad++ == 0) {
              first = "channel " + std::to_string(ch) + " outside the slice was written";
            }
          }
          continue;
        }
        const float got = stored_element(y, at / es, task.out_dtype);
        const float w = ref[(b * t.k + k) * hw + p];
        const double err =
            std::fabs(static_cast<double>(got) - w) / std::max(1.0, std::fabs(double{w}));
        if (!(err <= tol)) {
          if (bad++ == 0) {
            first = "image " + std::to_string(b) + " pixel " + std::to_string(p) + " channel " +
                    std::to_string(k) + ": got " + std::to_string(got) + ", want " +
                    std::to_string(w);
          }
        } else {
          worst = std::max(worst, err);
        }
      }
  if (bad > 0) {
    return ::testing::AssertionFailure()
           << bad << " bad elements (tolerance " << tol << "); first: " << first;
  }
  return ::testing::AssertionSuccess() << "max relative error " << worst;
}

/// A tensor-core config with the knobs l1 and epi set, and halo=0 (im2col rows) where c has no
/// halo.
inline ScheduleConfig with_l1_epi(ScheduleConfig c, int64_t l1, int64_t epi) {
  c.set("l1", l1);
  c.set("epi", epi);
  if (!c.values().contains("halo")) c.set("halo", 0);
  if (!c.values().contains("wg")) c.set("wg", 0);
  if (!c.values().contains("minb")) c.set("minb", 0);
  if (!c.values().contains("pers")) c.set("pers", 0);
  return c;
}

/// c as a halo-tile config of tiles `halo` pixels wide (one block a tile, no L1 copies).
inline ScheduleConfig with_halo(ScheduleConfig c, int64_t halo, int64_t epi = 0) {
  c.set("halo", halo);
  c.set("splitk", 1);
  c.set("l1", 0);
  c.set("epi", epi);
  return c;
}

/// c with warpgroup MMA (wgmma, sm_90a; one block a tile): A from registers (1) or from shared
/// memory (2, im2col rows; with_halo(with_wg(c, 2), 8) for halo tiles).
inline ScheduleConfig with_wg(ScheduleConfig c, int64_t mode = 1) {
  c.set("wg", mode);
  c.set("splitk", 1);
  if (mode == 2) c.set("halo", 0);
  return c;
}

/// For a K that is not a multiple of 64, configs whose channel tile divides K and is not a power
/// of two (space(t) offers those: 80, 48, 144, ...): each in 16-wide warp tiles, staged and not,
/// and in 48- or 80-wide ones where the tile holds them; 64 pixels per block in warp tiles of 32
/// pixels, or of 64 where that would make more than 8 warps (80 channels in 16-wide warp tiles).
inline std::vector<ScheduleConfig> exact_tile_configs(const CudaConvTask& t) {
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  std::vector<ScheduleConfig> out;
  for (int64_t bn : space.knobs[1].domain) {
    if ((bn & (bn - 1)) == 0) continue;
    std::vector<int64_t> wns = {16};
    for (int64_t w : {48, 80})
      if (bn % w == 0) wns.push_back(w);
    for (int64_t wn : wns)
      for (int64_t epi : {0, 1}) {
        const int64_t wm = 2 * (bn / wn) > 8 ? 64 : 32;
        const ScheduleConfig c = space.complete(ScheduleConfig({{"bm", 64},
                                                                {"bn", bn},
                                                                {"bk", 32},
                                                                {"wm", wm},
                                                                {"wn", wn},
                                                                {"stages", 3},
                                                                {"epi", epi}}));
        if (TensorCoreConvTemplate::valid(t, c)) out.push_back(c);
      }
  }
  return out;
}

/// The default config and others that differ from it in every knob, those valid for t: the tile
/// shapes in the form stored before the knobs l1 and epi (read as l1=0, epi=0), then the default
/// and some of those with the L1 copies, the staged epilogue, and both.
inline std::vector<ScheduleConfig> tc_configs(const CudaConvTask& t) {
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  std::vector<ScheduleConfig> out = {def};
  const std::vector<std::map<std::string, int64_t>> tries = {
      {{"bm", 32}, {"bn", 16}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 2}},
      {{"bm", 64}, {"bn", 32}, {"bk", 32}, {"wm", 32}, {"wn", 16}, {"stages", 3}},
      {{"bm", 32}, {"bn", 64}, {"bk", 64}, {"wm", 16}, {"wn", 32}, {"stages", 4}},
      {{"bm", 128}, {"bn", 64}, {"bk", 32}, {"wm", 64}, {"wn", 32}, {"stages", 4}},
      {{"bm", 128}, {"bn", 128}, {"bk", 32}, {"wm", 64}, {"wn", 32}, {"stages", 3}},
      {{"bm", 256}, {"bn", 128}, {"bk", 32}, {"wm", 64}, {"wn", 64}, {"stages", 3}},
      {{"bm", 64}, {"bn", 128}, {"bk", 64}, {"wm", 32}, {"wn", 64}, {"stages", 2}},
      {{"bm", 32}, {"bn", 32}, {"bk", 128}, {"wm", 16}, {"wn", 16}, {"stages", 4}}};
  const auto add = [&](const ScheduleConfig& c) {
    if (TensorCoreConvTemplate::valid(t, c) && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(c);
  };
  for (const auto& v : tries) add(space.complete(ScheduleConfig(v)));
  add(with_l1_epi(def, 1, 0));
  add(with_l1_epi(def, 0, 1));
  add(with_l1_epi(def, 1, 1));
  add(with_l1_epi(space.complete(ScheduleConfig(tries[0])), 0, 1));
  add(with_l1_epi(space.complete(ScheduleConfig(tries[1])), 1, 1));
  add(with_l1_epi(space.complete(ScheduleConfig(tries[3])), 0, 1));
  for (const ScheduleConfig& c : exact_tile_configs(t)) add(c);
  // Halo tiles (where 16 | C), 8 to 32 pixels wide.
  add(with_halo(space.complete(ScheduleConfig(tries[0])), 8));
  add(with_halo(space.complete(ScheduleConfig(tries[1])), 16, 1));
  add(with_halo(space.complete(ScheduleConfig(tries[4])), 32));
  // Warpgroup MMA (tasks for sm_90): im2col rows and halo tiles, one and two warpgroups.
  add(with_wg(space.complete(ScheduleConfig(tries[3]))));
  add(with_wg(space.complete(ScheduleConfig(tries[5]))));
  add(with_wg(with_halo(space.complete(ScheduleConfig(tries[1])), 16, 1)));
  add(with_wg(with_halo(space.complete(ScheduleConfig(tries[6])), 8)));
  // Both operands from shared memory: one and two warpgroups, 1 and 2 m-tiles, 16-deep steps,
  // and warp tiles as wide as 128 channels or the whole of K's exact tile (144).
  add(with_wg(space.complete(ScheduleConfig(tries[5])), 2));
  add(with_wg(space.complete(ScheduleConfig({{"bm", 128},
                                             {"bn", 64},
                                             {"bk", 32},
                                             {"wm", 32},
                                             {"wn", 64},
                                             {"stages", 3},
                                             {"epi", 1}})),
              2));
  add(with_wg(space.complete(ScheduleConfig(
                  {{"bm", 64}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 32}, {"stages", 3}})),
              2));
  add(with_wg(space.complete(ScheduleConfig(
                  {{"bm", 64}, {"bn", 128}, {"bk", 64}, {"wm", 16}, {"wn", 128}, {"stages", 4}})),
              2));
  for (int64_t bn : space.knobs[1].domain)
    if (bn > 80 && bn % 32 != 0)
      add(with_wg(space.complete(ScheduleConfig(
                      {{"bm", 64}, {"bn", bn}, {"bk", 32}, {"wm", 16}, {"wn", bn}, {"stages", 3}})),
                  2));
  // And A from halo tiles 8 pixels wide: 1 and 2 m-tiles a warpgroup, two warpgroups, and two
  // m-tiles of a 144-channel tile (144 accumulators a thread).
  const auto wg2_halo = [&](const std::map<std::string, int64_t>& shape, int64_t epi,
                            int64_t pers = 0) {
    ScheduleConfig c = with_halo(with_wg(space.complete(ScheduleConfig(shape)), 2), 8, epi);
    c.set("pers", pers);
    add(c);
  };
  wg2_halo({{"bm", 64}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 32}, {"stages", 3}}, 0);
  wg2_halo({{"bm", 128}, {"bn", 64}, {"bk", 32}, {"wm", 32}, {"wn", 64}, {"stages", 4}}, 1);
  wg2_halo({{"bm", 128}, {"bn", 64}, {"bk", 64}, {"wm", 16}, {"wn", 64}, {"stages", 3}}, 0);
  for (int64_t bn : space.knobs[1].domain)
    if (bn > 80 && bn % 32 != 0)
      wg2_halo({{"bm", 128}, {"bn", bn}, {"bk", 32}, {"wm", 32}, {"wn", bn}, {"stages", 3}}, 1);
  // Persistent blocks (the weights stay in shared memory, each block walks tiles): one team with
  // fragment and staged epilogues, one and two warpgroups, and two teams.
  wg2_halo({{"bm", 128}, {"bn", 64}, {"bk", 64}, {"wm", 16}, {"wn", 64}, {"stages", 3}}, 0, 1);
  wg2_halo({{"bm", 64}, {"bn", 32}, {"bk", 32}, {"wm", 16}, {"wn", 32}, {"stages", 3}}, 1, 1);
  wg2_halo({{"bm", 128}, {"bn", 64}, {"bk", 64}, {"wm", 16}, {"wn", 64}, {"stages", 3}}, 0, 2);
  return out;
}

inline std::vector<ScheduleConfig> simt_configs(const CudaConvTask& t) {
  std::vector<ScheduleConfig> out = {SimtConvTemplate::default_config(t)};
  const std::vector<std::map<std::string, int64_t>> tries = {
      {{"bm", 32}, {"bn", 16}, {"bk", 8}, {"tm", 1}, {"tn", 1}},
      {{"bm", 32}, {"bn", 32}, {"bk", 8}, {"tm", 2}, {"tn", 4}},
      {{"bm", 64}, {"bn", 64}, {"bk", 16}, {"tm", 4}, {"tn", 4}},
      {{"bm", 128}, {"bn", 64}, {"bk", 32}, {"tm", 8}, {"tn", 4}},
      {{"bm", 128}, {"bn", 128}, {"bk", 8}, {"tm", 8}, {"tn", 8}}};
  for (const auto& v : tries) {
    const ScheduleConfig c(v);
    if (SimtConvTemplate::valid(t, c) && !(c == out[0])) out.push_back(c);
  }
  return out;
}

/// Configs of the direct template: the default and others that differ from it in every knob,
/// FMA and MMA (several channel groups per block, several tile rows per warp, 32 channels per
/// thread or warp), those valid for t.
inline std::vector<ScheduleConfig> direct_configs(const CudaConvTask& t) {
  std::vector<ScheduleConfig> out = {DirectConvTemplate::default_config(t)};
  const std::vector<std::map<std::string, int64_t>> tries = {
      {{"tw", 8}, {"th", 4}, {"pt", 1}, {"kb", 8}, {"tn", 8}, {"mma", 0}},
      {{"tw", 16}, {"th", 4}, {"pt", 2}, {"kb", 16}, {"tn", 4}, {"mma", 0}},
      {{"tw", 8}, {"th", 8}, {"pt", 4}, {"kb", 16}, {"tn", 8}, {"mma", 0}},
      {{"tw", 32}, {"th", 2}, {"pt", 1}, {"kb", 32}, {"tn", 16}, {"mma", 0}},
      {{"tw", 64}, {"th", 1}, {"pt", 1}, {"kb", 64}, {"tn", 32}, {"mma", 0}},
      {{"tw", 8}, {"th", 16}, {"pt", 8}, {"kb", 8}, {"tn", 4}, {"mma", 0}},
      {{"tw", 16}, {"th", 2}, {"pt", 1}, {"kb", 16}, {"tn", 16}, {"mma", 1}},
      {{"tw", 32}, {"th", 4}, {"pt", 2}, {"kb", 32}, {"tn", 16}, {"mma", 1}},
      {{"tw", 16}, {"th", 8}, {"pt", 4}, {"kb", 8}, {"tn", 8}, {"mma", 1}},
      {{"tw", 64}, {"th", 1}, {"pt", 1}, {"kb", 64}, {"tn", 32}, {"mma", 1}}};
  for (const auto& v : tries) {
    const ScheduleConfig c = DirectConvTemplate::space(t).complete(ScheduleConfig(v));
    if (DirectConvTemplate::valid(t, c) && !(c == out[0])) out.push_back(c);
  }
  // Each MMA config on the pairs path too, where that is valid (16-bit NCHW images).
  for (size_t i = 0, n = out.size(); i < n; ++i) {
    ScheduleConfig c = out[i];
    c.set("pairs", 1);
    if (DirectConvTemplate::valid(t, c)) out.push_back(c);
  }
  return out;
}

/// Configs of the depthwise template: the default and others that differ from it in every knob
/// (one channel a thread, odd pixels per thread counts of a row, 16-byte vectors of 8), those
/// valid for t.
inline std::vector<ScheduleConfig> dw_configs(const CudaConvTask& t) {
  std::vector<ScheduleConfig> out = {DwConvTemplate::default_config(t)};
  const std::vector<std::map<std::string, int64_t>> tries = {
      {{"vec", 1}, {"px", 1}, {"threads", 64}},
      {{"vec", 2}, {"px", 4}, {"threads", 128}},
      {{"vec", 4}, {"px", 8}, {"threads", 256}},
      {{"vec", 8}, {"px", 2}, {"threads", 512}},
      {{"vec", 8}, {"px", 4}, {"threads", 64}}};
  for (const auto& v : tries) {
    const ScheduleConfig c(v);
    if (DwConvTemplate::valid(t, c) && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(c);
  }
  return out;
}

/// The conv templates, for the tests that run each of them the same way.
enum class Template { kTensorCore, kSimt, kDirect, kDepthwise };

inline const char* template_tag(Template tmpl) {
  switch (tmpl) {
    case Template::kTensorCore: return "tc";
    case Template::kSimt: return "simt";
    case Template::kDirect: return "direct";
    case Template::kDepthwise: return "dw";
  }
  return "?";
}

inline bool template_matches(Template tmpl, const CudaConvTask& t) {
  switch (tmpl) {
    case Template::kTensorCore: return TensorCoreConvTemplate::matches(t);
    case Template::kSimt: return SimtConvTemplate::matches(t);
    case Template::kDirect: return DirectConvTemplate::matches(t);
    case Template::kDepthwise: return DwConvTemplate::matches(t);
  }
  return false;
}

/// The configs each template is tested with (tc_configs, simt_configs, direct_configs).
inline std::vector<ScheduleConfig> template_configs(Template tmpl, const CudaConvTask& t) {
  switch (tmpl) {
    case Template::kTensorCore: return tc_configs(t);
    case Template::kSimt: return simt_configs(t);
    case Template::kDirect: return direct_configs(t);
    case Template::kDepthwise: return dw_configs(t);
  }
  return {};
}

inline ScheduleConfig template_default(Template tmpl, const CudaConvTask& t) {
  switch (tmpl) {
    case Template::kTensorCore: return TensorCoreConvTemplate::default_config(t);
    case Template::kSimt: return SimtConvTemplate::default_config(t);
    case Template::kDirect: return DirectConvTemplate::default_config(t);
    case Template::kDepthwise: return DwConvTemplate::default_config(t);
  }
  return {};
}

inline CudaKernel template_emit(Template tmpl, const CudaConvTask& t, const ScheduleConfig& cfg,
                                const std::string& symbol) {
  switch (tmpl) {
    case Template::kTensorCore: return TensorCoreConvTemplate::emit(t, cfg, symbol);
    case Template::kSimt: return SimtConvTemplate::emit(t, cfg, symbol);
    case Template::kDirect: return DirectConvTemplate::emit(t, cfg, symbol);
    case Template::kDepthwise: return DwConvTemplate::emit(t, cfg, symbol);
  }
  return {};
}

inline Tensor template_weights(Template tmpl, const CudaConvTask& t, const Tensor& oihw) {
  switch (tmpl) {
    case Template::kTensorCore: return TensorCoreConvTemplate::pack_weights(t, oihw.data<float>());
    case Template::kSimt: return SimtConvTemplate::pack_weights(t, oihw.data<float>());
    case Template::kDirect: return DirectConvTemplate::pack_weights(t, oihw.data<float>());
    case Template::kDepthwise: return DwConvTemplate::pack_weights(t, oihw.data<float>());
  }
  return {};
}

/// The input buffer of a kernel: the image, dense NCHW image_dtype (x already rounded to dtype,
/// as a converting gather rounds, and to image_dtype), for in_nchw; else x stored as dtype in
/// the task's NHWC input slice, `fill` bytes around it.
inline std::vector<uint8_t> input_buffer(const CudaConvTask& t, const Tensor& x, uint8_t fill) {
  if (!t.in_nchw) return to_nhwc_buffer(x, t.dtype, t.in, fill);
  const Tensor image = x.cast(t.image_dtype);
  const auto* p = static_cast<const uint8_t*>(image.raw());
  return std::vector<uint8_t>(p, p + image.nbytes());
}

/// A conv with dilation (ConvTask::make has none).
inline ConvTask dilated(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t kernel,
                        int64_t dilation, int64_t pad, Activation act) {
  ConvTask t = ConvTask::make(n, c, h, w, k, kernel, 1, pad, act);
  t.dh = t.dw = dilation;
  t.oh = h + 2 * pad - dilation * (kernel - 1);
  t.ow = w + 2 * pad - dilation * (kernel - 1);
  return t;
}

/// A depthwise conv (groups == C == K) of conv's shape.
inline ConvTask depthwise(ConvTask conv) {
  conv.groups = conv.c;
  return conv;
}

/// A task with explicit slices.
inline CudaConvTask sliced(const ConvTask& conv, DType dtype, DType out_dtype, ChannelSlice in,
                           ChannelSlice out, ChannelSlice res) {
  CudaConvTask t = CudaConvTask::dense(conv, dtype, out_dtype);
  t.in = in;
  t.out = out;
  t.res = res;
  return t;
}

/// t writing also its nearest upsampled copy (sh x sw) into slice s of an NHWC buffer.
inline CudaConvTask with_up(CudaConvTask t, int64_t sh, int64_t sw, ChannelSlice s) {
  t.up = CudaConvUp{sh, sw, s};
  return t;
}

/// The upsampled copy as check_output sees it: the output of a conv of the upsampled size
/// stored in the copy's slice.
inline CudaConvTask upsampled_view(const CudaConvTask& t) {
  CudaConvTask v = t;
  v.conv.oh *= t.up->sh;
  v.conv.ow *= t.up->sw;
  v.out = t.up->out;
  v.up.reset();
  return v;
}

/// Bytes of the buffer the upsampled copy of t lies in.
inline size_t upsampled_bytes(const CudaConvTask& t) {
  const CudaConvTask v = upsampled_view(t);
  return static_cast<size_t>(v.conv.n * v.conv.oh * v.conv.ow * v.out.stride) *
         dtype_size(t.out_dtype);
}

/// The nearest upsampling of an NCHW float32 tensor by integer factors (what the Resize the copy
/// stands for computes).
inline Tensor upsample_nearest(const Tensor& nchw, int64_t sh, int64_t sw) {
  const int64_t n = nchw.dim(0), c = nchw.dim(1), h = nchw.dim(2), w = nchw.dim(3);
  Tensor out(DType::kFloat32, {n, c, h * sh, w * sw});
  const float* src = nchw.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < n * c; ++i)
    for (int64_t y = 0; y < h * sh; ++y)
      for (int64_t x = 0; x < w * sw; ++x)
        dst[(i * h * sh + y) * w * sw + x] = src[(i * h + y / sh) * w + x / sw];
  return out;
}

/// t with its output and residual stored NCHW.
inline CudaConvTask nchw_out(CudaConvTask t) {
  t.out_nchw = true;
  return t;
}

/// The back-to-back pair of `first` (NHWC, dense output) and a 1x1 conv of its output to k2
/// channels with activation act2, written into slice out2 (NCHW when out2_nchw) as out2_dtype;
/// random second weights (rounded to the activation dtype, scaled as make_operands scales) and
/// bias.
inline CudaConvTask with_b2b(CudaConvTask first, int64_t k2, Activation act2, ChannelSlice out2,
                             bool out2_nchw, DType out2_dtype, uint32_t seed) {
  const int64_t n1 = first.conv.k;
  const float ws = 1.7f / std::sqrt(static_cast<float>(n1));
  B2bStage b;
  b.k = k2;
  b.act = act2;
  b.out_dtype = out2_dtype;
  b.out = out2;
  b.out_nchw = out2_nchw;
  b.w = rounded_to(yoloc::testing::random_tensor({k2, n1, 1, 1}, seed, -ws, ws), first.dtype);
  b.bias = yoloc::testing::random_tensor({k2}, seed + 1, -0.5f, 0.5f);
  first.b2b = b;
  return first;
}

/// The first conv of a b2b pair alone (what the unfused pair runs first).
inline CudaConvTask first_stage(CudaConvTask t) {
  t.b2b.reset();
  return t;
}

/// The reference output of a b2b pair (NCHW float32): the first conv's (first.want of
/// make_operands(first_stage(t))) rounded to its stored dtype, as the unfused pair stores the
/// intermediate, through the second conv.
inline Tensor reference_b2b(const CudaConvTask& t, const ConvOperands& first) {
  return reference_conv(t.second_stage().conv, rounded_to(first.want, t.out_dtype), t.b2b->w,
                        t.b2b->bias, Tensor());
}

/// A back-to-back pair of yolov8n at 640x640, batch 1, as the CUDA target fuses it.
struct B2bLayer {
  const char* what;
  CudaConvTask task;
};

/// The pairs yoloc fuses in yolov8n at batch 1 (fp16 or bf16): the backbone's stride-2 convs with
/// the cv1 of the C2f after them (written into the C2f's concat), and the end of each branch of
/// the detect head (3x3 conv, then the 1x1 conv writing NCHW into the level's concat of 144).
inline std::vector<B2bLayer> yolov8n_b2b_layers(DType dt, int sm) {
  const Activation silu = Activation::kSilu, none = Activation::kNone;
  const auto pair = [&](const char* what, const ConvTask& c, int64_t k2, Activation act2,
                        ChannelSlice out2, bool nchw, uint32_t seed) {
    CudaConvTask t = CudaConvTask::dense(c, dt, dt);
    t.sm = sm;
    return B2bLayer{what, with_b2b(t, k2, act2, out2, nchw, dt, seed)};
  };
  return {
      pair("model.3 32->64 3x3 s2 @160 + model.4 cv1 64->64", ConvTask::make(1, 32, 160, 160, 64, 3, 2, 1, silu), 64, silu, {128, 0}, false, 1),
      pair("model.5 64->128 3x3 s2 @80 + model.6 cv1 128->128", ConvTask::make(1, 64, 80, 80, 128, 3, 2, 1, silu), 128, silu, {256, 0}, false, 2),
      pair("head P3 cv2 64->64 3x3 @80 + 1x1 box", ConvTask::make(1, 64, 80, 80, 64, 3, 1, 1, silu), 64, none, {144, 0}, true, 3),
      pair("head P3 cv3 80->80 3x3 @80 + 1x1 class", ConvTask::make(1, 80, 80, 80, 80, 3, 1, 1, silu), 80, none, {144, 64}, true, 4),
      pair("head P4 cv2 64->64 3x3 @40 + 1x1 box", ConvTask::make(1, 64, 40, 40, 64, 3, 1, 1, silu), 64, none, {144, 0}, true, 5),
      pair("head P4 cv3 80->80 3x3 @40 + 1x1 class", ConvTask::make(1, 80, 40, 40, 80, 3, 1, 1, silu), 80, none, {144, 64}, true, 6),
      pair("head P5 cv2 64->64 3x3 @20 + 1x1 box", ConvTask::make(1, 64, 20, 20, 64, 3, 1, 1, silu), 64, none, {144, 0}, true, 7),
      pair("head P5 cv3 80->80 3x3 @20 + 1x1 class", ConvTask::make(1, 80, 20, 20, 80, 3, 1, 1, silu), 80, none, {144, 64}, true, 8),
  };
}

/// The default config of a b2b pair and others of other tiles, warp tiles, depth steps, stages,
/// L1 copies and halo tiles, those valid for t.
inline std::vector<ScheduleConfig> b2b_configs(const CudaConvTask& t) {
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  std::vector<ScheduleConfig> out = {def};
  const std::vector<std::map<std::string, int64_t>> tries = {
      {{"bm", 32}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 2}},
      {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 3}},
      {{"bm", 32}, {"bn", 80}, {"bk", 32}, {"wm", 32}, {"wn", 16}, {"stages", 4}},
      {{"bm", 64}, {"bn", 128}, {"bk", 64}, {"wm", 32}, {"wn", 64}, {"stages", 2}},
      {{"bm", 128}, {"bn", 64}, {"bk", 16}, {"wm", 64}, {"wn", 16}, {"stages", 3}, {"l1", 1}},
      {{"bm", 32}, {"bn", 128}, {"bk", 128}, {"wm", 16}, {"wn", 32}, {"stages", 2}},
      // Halo tiles (first stages of 16k channels): rows of 8, 16 and 32 pixels.
      {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 3}, {"halo", 8}},
      {{"bm", 32}, {"bn", 80}, {"bk", 16}, {"wm", 16}, {"wn", 16}, {"stages", 2}, {"halo", 16}},
      {{"bm", 128}, {"bn", 32}, {"bk", 64}, {"wm", 32}, {"wn", 32}, {"stages", 2}, {"halo", 32}},
      // A wgmma first stage (wg=2, tasks for sm_90): im2col rows and halo tiles of 8, one and two
      // warpgroups, one and two m-tiles.
      // clang-format off
      {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 16}, {"wn", 64}, {"stages", 3}, {"wg", 2}},
      {{"bm", 64}, {"bn", 80}, {"bk", 32}, {"wm", 16}, {"wn", 80}, {"stages", 3}, {"wg", 2}},
      {{"bm", 128}, {"bn", 80}, {"bk", 32}, {"wm", 32}, {"wn", 80}, {"stages", 3}, {"wg", 2},
       {"halo", 8}},
      {{"bm", 128}, {"bn", 64}, {"bk", 64}, {"wm", 32}, {"wn", 64}, {"stages", 4}, {"wg", 2},
       {"halo", 8}},
      {{"bm", 128}, {"bn", 32}, {"bk", 16}, {"wm", 16}, {"wn", 32}, {"stages", 3}, {"wg", 2},
       {"halo", 8}}
      // clang-format on
  };
  for (const auto& v : tries) {
    const ScheduleConfig c = space.complete(ScheduleConfig(v));
    if (TensorCoreConvTemplate::valid(t, c) && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(c);
  }
  // Each with the second stage's output staged too (epi=1), where that is valid.
  for (size_t i = 0, n = out.size(); i < n; ++i) {
    ScheduleConfig c = out[i];
    c.set("epi", 1);
    if (TensorCoreConvTemplate::valid(t, c)) out.push_back(c);
  }
  return out;
}

}  // namespace yoloc::codegen::cuda::testing
