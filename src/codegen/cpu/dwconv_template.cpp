#include "codegen/cpu/dwconv_template.h"

#include <fmt/format.h>

#include "codegen/cpu/emit_util.h"

namespace yoloc::codegen::cpu {
namespace {

// A tile holds OWB columns x L lanes of accumulators; the lane loops vectorise.
constexpr const char* kKernel = R"(
namespace @SYM@_ns {
constexpr int64_t L = @L@, CB = @CB@, H = @H@, W = @W@, OH = @OH@, OW = @OW@;
constexpr int64_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PH = @PH@, PW = @PW@;
constexpr int64_t DH = @DH@, DW = @DW@, OWB = @OWB@;
}  // namespace @SYM@_ns

extern "C" void @SYM@(const float* in, const float* w, const float* bias, const float* res,
                      float* out, int64_t begin, int64_t end) {
  using namespace @SYM@_ns;
  for (int64_t it = begin; it < end; ++it) {
    const int64_t oh = it % OH, cb = (it / OH) % CB, n = it / (OH * CB);
    const float* x = in + (n * CB + cb) * H * W * L;
    const float* wp = w + cb * KH * KW * L;
    const int64_t ob = ((n * CB + cb) * OH + oh) * OW * L;
    for (int64_t ow0 = 0; ow0 < OW; ow0 += OWB) {
      const int64_t nw = OW - ow0 < OWB ? OW - ow0 : OWB;
      float acc[OWB][L];
      for (int64_t j = 0; j < OWB; ++j)
        for (int64_t l = 0; l < L; ++l) acc[j][l] = bias[cb * L + l];
      for (int64_t r = 0; r < KH; ++r) {
        const int64_t ih = oh * SH - PH + r * DH;
        if (ih < 0 || ih >= H) continue;
        for (int64_t s = 0; s < KW; ++s) {
          const float* wv = wp + (r * KW + s) * L;
#pragma GCC unroll 16
          for (int64_t j = 0; j < OWB; ++j) {
            const int64_t iw = (ow0 + j) * SW - PW + s * DW;
            if (j >= nw || iw < 0 || iw >= W) continue;
            const float* xv = x + (ih * W + iw) * L;
            for (int64_t l = 0; l < L; ++l) acc[j][l] += wv[l] * xv[l];
          }
        }
      }
      for (int64_t j = 0; j < nw; ++j) {
        for (int64_t l = 0; l < L; ++l) {
          float v = @ACT@(acc[j][l]);
          if (@RES@) v += res[ob + (ow0 + j) * L + l];
          out[ob + (ow0 + j) * L + l] = v;
        }
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
  s.knobs.push_back({"owb", "output columns per register tile", {1, 2, 4, 8, 10, 14, 16}});
  return s;
}

bool DwConvTemplate::valid(const ConvTask& t, const ScheduleConfig& cfg) {
  return matches(t) && cfg.in_space(space(t)) && cfg.get("owb") <= t.ow;
}

ScheduleConfig DwConvTemplate::default_config(const ConvTask& t) {
  YOLOC_CHECK(matches(t), "depthwise template does not match {}", t.key());
  // The widest tile that divides OW (no ragged tail), at most 8 and with its accumulators and
  // the weight and input vectors in the ISA's registers (an NCHW16c column takes 1 zmm, 2 ymm
  // or 4 q).
  const int64_t per = lanes(t) == kBlock ? registers_per_block(t.isa) : 1;
  int64_t best = 1;
  for (int64_t v : {2, 4, 8}) {
    const bool fits = (v + 2) * per <= isa_info(t.isa).vector_registers;
    if (fits && v <= t.ow && (t.ow % v == 0 || best == 1)) best = v;
  }
  return ScheduleConfig({{"owb", best}});
}

CpuKernel DwConvTemplate::emit(const ConvTask& t, const ScheduleConfig& cfg,
                               const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "depthwise config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  const int64_t l = lanes(t);
  std::string body = kKernel;
  const auto num = [](int64_t v) { return std::to_string(v); };
  const char* act = t.act == Activation::kSilu   ? "yc_silu"
                    : t.act == Activation::kRelu ? "yc_relu1"
                                                 : "";
  const std::pair<const char*, std::string> subs[] = {
      {"@SYM@", symbol},      {"@L@", num(l)},
      {"@CB@", num(t.c / l)}, {"@H@", num(t.h)},
      {"@W@", num(t.w)},      {"@OH@", num(t.oh)},
      {"@OW@", num(t.ow)},    {"@KH@", num(t.kh)},
      {"@KW@", num(t.kw)},    {"@SH@", num(t.sh)},
      {"@SW@", num(t.sw)},    {"@PH@", num(t.ph)},
      {"@PW@", num(t.pw)},    {"@DH@", num(t.dh)},
      {"@DW@", num(t.dw)},    {"@OWB@", num(cfg.get("owb"))},
      {"@ACT@", act},         {"@RES@", t.residual ? "true" : "false"}};
  for (const auto& [from, to] : subs) replace_all(body, from, to);
  CpuKernel k;
  k.symbol = symbol;
  k.source = std::string(kScalarPrelude) + "// " + t.key() + " | " + cfg.str() + body;
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
