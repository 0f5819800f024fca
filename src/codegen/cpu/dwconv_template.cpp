#include "codegen/cpu/dwconv_template.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpu/emit_util.h"

namespace yoloc::codegen::cpu {
namespace {

// NCHW16c: one work item is an output row of one channel block, cut into tiles of NW columns
// held in registers. Per kernel row, a tile loads each input column it needs once (the NIN
// columns its NW outputs' taps span) and every tap is one FMA on a register. Tiles whose taps
// all lie inside the row (kEdge false) load without tests; the others load zeros for columns
// outside the row (what the padding holds).
constexpr const char* kBlockedKernel = R"(
namespace @SYM@_ns {
using namespace @VNS@;
constexpr int64_t CB = @CB@, H = @H@, W = @W@, OH = @OH@, OW = @OW@;
constexpr int64_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PH = @PH@, PW = @PW@;
constexpr int64_t DH = @DH@, DW = @DW@, OWB = @OWB@;
constexpr int64_t TAIL = OW % OWB == 0 ? OWB : OW % OWB;

template <int NW, bool kEdge>
static inline __attribute__((always_inline)) void tile(
    const float* __restrict x, const float* __restrict w, const float* __restrict bias,
    const float* __restrict res, float* __restrict out, int64_t oh, int64_t ow0) {
  constexpr int NIN = (NW - 1) * SW + (KW - 1) * DW + 1;
  yc_vec acc[NW];
  const yc_vec b = yc_load(bias);
#pragma GCC unroll 32
  for (int j = 0; j < NW; ++j) acc[j] = b;
  const int64_t iw0 = ow0 * SW - PW;
  for (int64_t r = 0; r < KH; ++r) {
    const int64_t ih = oh * SH - PH + r * DH;
    if (ih < 0 || ih >= H) continue;
    const float* row = x + ih * W * 16;
    yc_vec xin[NIN];
#pragma GCC unroll 64
    for (int i = 0; i < NIN; ++i) {
      const int64_t iw = iw0 + i;
      xin[i] = !kEdge || (iw >= 0 && iw < W) ? yc_load(row + iw * 16) : yc_zero();
    }
#pragma GCC unroll 16
    for (int s = 0; s < KW; ++s) {
      const yc_vec wv = yc_load(w + (r * KW + s) * 16);
#pragma GCC unroll 32
      for (int j = 0; j < NW; ++j) acc[j] = yc_fma(wv, xin[j * SW + s * DW], acc[j]);
    }
  }
  const int64_t ob = (oh * OW + ow0) * 16;
#pragma GCC unroll 32
  for (int j = 0; j < NW; ++j) {
    yc_vec v = @ACT@(acc[j]);
    if (@RES@) v = yc_add(v, yc_load(res + ob + j * 16));
    yc_store(out + ob + j * 16, v);
  }
}
}  // namespace @SYM@_ns

extern "C" void @SYM@(const float* in, const float* w, const float* bias, const float* res,
                      float* out, int64_t begin, int64_t end) {
  using namespace @SYM@_ns;
  for (int64_t it = begin; it < end; ++it) {
    const int64_t oh = it % OH, nc = it / OH, cb = nc % CB;
    const float* x = in + nc * H * W * 16;
    const float* wp = w + cb * KH * KW * 16;
    const float* bp = bias + cb * 16;
    const float* rp = @RES@ ? res + nc * OH * OW * 16 : nullptr;
    float* op = out + nc * OH * OW * 16;
    int64_t ow0 = 0;
    for (; ow0 + OWB <= OW; ow0 += OWB) {
      if (ow0 * SW - PW < 0 || (ow0 + OWB - 1) * SW - PW + (KW - 1) * DW >= W) {
        tile<OWB, true>(x, wp, bp, rp, op, oh, ow0);
      } else {
        tile<OWB, false>(x, wp, bp, rp, op, oh, ow0);
      }
    }
    if constexpr (OW % OWB != 0) tile<TAIL, true>(x, wp, bp, rp, op, oh, ow0);
  }
}
)";

// Plain NCHW (C not a multiple of 16): one lane, each output column tested against the row.
constexpr const char* kPlainKernel = R"(
namespace @SYM@_ns {
constexpr int64_t CB = @CB@, H = @H@, W = @W@, OH = @OH@, OW = @OW@;
constexpr int64_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PH = @PH@, PW = @PW@;
constexpr int64_t DH = @DH@, DW = @DW@, OWB = @OWB@;
}  // namespace @SYM@_ns

extern "C" void @SYM@(const float* in, const float* w, const float* bias, const float* res,
                      float* out, int64_t begin, int64_t end) {
  using namespace @SYM@_ns;
  for (int64_t it = begin; it < end; ++it) {
    const int64_t oh = it % OH, cb = (it / OH) % CB, n = it / (OH * CB);
    const float* x = in + (n * CB + cb) * H * W;
    const float* wp = w + cb * KH * KW;
    const int64_t ob = ((n * CB + cb) * OH + oh) * OW;
    for (int64_t ow0 = 0; ow0 < OW; ow0 += OWB) {
      const int64_t nw = OW - ow0 < OWB ? OW - ow0 : OWB;
      float acc[OWB];
      for (int64_t j = 0; j < OWB; ++j) acc[j] = bias[cb];
      for (int64_t r = 0; r < KH; ++r) {
        const int64_t ih = oh * SH - PH + r * DH;
        if (ih < 0 || ih >= H) continue;
        for (int64_t s = 0; s < KW; ++s) {
#pragma GCC unroll 16
          for (int64_t j = 0; j < OWB; ++j) {
            const int64_t iw = (ow0 + j) * SW - PW + s * DW;
            if (j >= nw || iw < 0 || iw >= W) continue;
            acc[j] += wp[r * KW + s] * x[ih * W + iw];
          }
        }
      }
      for (int64_t j = 0; j < nw; ++j) {
        float v = @ACT@(acc[j]);
        if (@RES@) v += res[ob + ow0 + j];
        out[ob + ow0 + j] = v;
      }
    }
  }
}
)";

}  // namespace

bool DwConvTemplate::matches(const ConvTask& t) {
  return t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.oh > 0 && t.ow > 0 && t.kh > 0 && t.kw > 0 &&
         t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 && t.ph >= 0 && t.pw >= 0 &&
         t.groups == t.c && t.k == t.c;
}

int64_t DwConvTemplate::lanes(const ConvTask& t) { return t.c % kBlock == 0 ? kBlock : 1; }

ScheduleSpace DwConvTemplate::space(const ConvTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"owb", "output columns per register tile",
                     {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}});
  return s;
}

bool DwConvTemplate::valid(const ConvTask& t, const ScheduleConfig& cfg) {
  return matches(t) && cfg.in_space(space(t)) && cfg.get("owb") <= t.ow;
}

ScheduleConfig DwConvTemplate::default_config(const ConvTask& t) {
  YOLOC_CHECK(matches(t), "depthwise template does not match {}", t.key());
  if (lanes(t) != kBlock) return ScheduleConfig({{"owb", std::min<int64_t>(t.ow, 8)}});
  // The widest tile whose accumulators, input columns and a weight fit the ISA's registers,
  // then the same number of tiles evened out (4 x 13 rather than 3 x 14 + 10).
  const int64_t per = registers_per_block(t.isa), regs = isa_info(t.isa).vector_registers;
  int64_t widest = 1;
  for (int64_t v = 1; v <= 16 && v <= t.ow; ++v) {
    const int64_t in_cols = (v - 1) * t.sw + (t.kw - 1) * t.dw + 1;
    if ((v + in_cols + 1) * per <= regs) widest = v;
  }
  return ScheduleConfig({{"owb", ceil_div(t.ow, ceil_div(t.ow, widest))}});
}

CpuKernel DwConvTemplate::emit(const ConvTask& t, const ScheduleConfig& cfg,
                               const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "depthwise config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  const int64_t l = lanes(t);
  const auto prelude = vector_prelude(t.isa);
  std::string body = l == kBlock ? kBlockedKernel : kPlainKernel;
  const auto num = [](int64_t v) { return std::to_string(v); };
  // The blocked kernel's activations are the vector ones, the plain kernel's the scalar ones.
  const char* act = t.act == Activation::kSilu   ? "yc_silu"
                    : t.act == Activation::kRelu ? (l == kBlock ? "yc_relu" : "yc_relu1")
                                                 : (l == kBlock ? "yc_none" : "");
  const std::pair<const char*, std::string> subs[] = {
      {"@SYM@", symbol},      {"@L@", num(l)},
      {"@CB@", num(t.c / l)}, {"@H@", num(t.h)},
      {"@W@", num(t.w)},      {"@OH@", num(t.oh)},
      {"@OW@", num(t.ow)},    {"@KH@", num(t.kh)},
      {"@KW@", num(t.kw)},    {"@SH@", num(t.sh)},
      {"@SW@", num(t.sw)},    {"@PH@", num(t.ph)},
      {"@PW@", num(t.pw)},    {"@DH@", num(t.dh)},
      {"@DW@", num(t.dw)},    {"@OWB@", num(cfg.get("owb"))},
      {"@ACT@", act},         {"@RES@", t.residual ? "true" : "false"},
      {"@VNS@", prelude.second}};
  for (const auto& [from, to] : subs) replace_all(body, from, to);
  CpuKernel k;
  k.symbol = symbol;
  k.source = (l == kBlock ? prelude.first : std::string(kScalarPrelude)) + "// " + t.key() +
             " | " + cfg.str() + body;
  k.work_items = t.n * (t.c / l) * t.oh;
  return k;
}

std::vector<float> DwConvTemplate::pack_weights(const ConvTask& t, const float* weights) {
  const int64_t l = lanes(t);
  std::vector<float> out(static_cast<size_t>(t.c * t.kh * t.kw));
  size_t i = 0;
  for (int64_t cb = 0; cb < t.c / l; ++cb)
    for (int64_t r = 0; r < t.kh; ++r)
      for (int64_t s = 0; s < t.kw; ++s)
        for (int64_t lane = 0; lane < l; ++lane, ++i)
          out[i] = weights[((cb * l + lane) * t.kh + r) * t.kw + s];
  return out;
}

}  // namespace yoloc::codegen::cpu
