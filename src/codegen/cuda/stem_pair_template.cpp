#include "codegen/cuda/stem_pair_template.h"

#include <tuple>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxFirstWindow = 7, kMaxFirstStride = 4;
constexpr int64_t kMaxSecondWindow = 3, kMaxSecondStride = 2;
constexpr int64_t kMaxIntermediate = 64;  // K0: first-conv accumulators of a thread
constexpr int64_t kMaxOutput = 128;       // K
constexpr int64_t kMaxAccumulators = 64;  // second conv: MT * NT * 4 per thread

// The sizes a config gives a block (the enumerators of the kernel, computed the same way).
struct Geometry {
  int64_t th, tw, warps;
  int64_t r, q;           // intermediate pixels: rows x columns
  int64_t ir, iq, pc;     // image rows x columns; columns per phase
  int64_t kp;             // halves per staged intermediate pixel
  int64_t mt, nt, steps;  // m-tiles per warp, n-tiles, 16-deep steps
  int64_t shared;         // bytes

  Geometry(const StemPairTask& task, int64_t th_, int64_t tw_, int64_t warps_)
      : th(th_), tw(tw_), warps(warps_) {
    const ConvTask& a = task.first.conv;
    const ConvTask& b = task.second.conv;
    r = (th - 1) * b.sh + b.kh;
    q = (tw - 1) * b.sw + b.kw;
    ir = (r - 1) * a.sh + a.kh;
    iq = (q - 1) * a.sw + a.kw;
    pc = cpu::ceil_div(iq, a.sw);
    kp = b.c + 4;
    mt = th * tw % (16 * warps) == 0 ? th * tw / (16 * warps) : 0;
    nt = b.k / 8;
    steps = b.kh * b.kw * (b.c / 16);
    const int64_t image = (a.c * ir * a.sw * pc + 3) / 4 * 4 * 4;  // sw0 16-byte aligned
    const int64_t w0 = a.c * a.kh * a.kw * a.k * 4;
    const int64_t w1 = steps * nt * 32 * 8;
    shared = image + w0 + w1 + r * q * kp * 2;
  }
  Geometry(const StemPairTask& task, const ScheduleConfig& cfg)
      : Geometry(task, cfg.get("th"), cfg.get("tw"), cfg.get("warps")) {}
};

// The kernel after the second conv's common declarations (conv_common_source: N, C = K0, H, W,
// K, OH, OW, KH, KW, SH, SW, PH, PW, OutT, epilogue2); the first conv's sizes are X-prefixed.
// See the header for the scheme; the comments here say why.
constexpr const char* kStemPairKernel = cuh::stem_pair;

// The first conv in fp32 FMAs (knob mma = 0): exact for float32 images and weights.
constexpr const char* kFirstConvFma = cuh::stem_pair_fma;

// The first conv on tensor cores (mma = 1).
constexpr const char* kFirstConvMma = cuh::stem_pair_mma;

bool plain(const ConvTask& t) {
  return t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 && t.kh > 0 &&
         t.kw > 0 && t.sh > 0 && t.sw > 0 && t.ph >= 0 && t.pw >= 0 && t.dh == 1 && t.dw == 1 &&
         t.groups == 1 && !t.residual;
}

}  // namespace

std::string StemPairTask::key() const {
  return "cuda_stem_pair " + first.key() + " then " + second.key();
}

bool StemPairTemplate::matches(const StemPairTask& task) {
  const CudaConvTask& f = task.first;
  const CudaConvTask& s = task.second;
  const ConvTask& a = f.conv;
  const ConvTask& b = s.conv;
  if (!plain(a) || !plain(b)) return false;
  const bool first_ok =
      f.in_nchw && f.image_dtype == DType::kFloat32 && f.in == ChannelSlice{a.c, 0} && a.c <= 4 &&
      a.kh <= kMaxFirstWindow && a.kw <= kMaxFirstWindow && a.sh <= kMaxFirstStride &&
      a.sw <= kMaxFirstStride && !f.out_nchw && !f.up && !f.b2b && f.out == ChannelSlice{a.k, 0};
  const bool sixteen = s.dtype == DType::kFloat16 || s.dtype == DType::kBFloat16;
  const bool second_ok = !s.in_nchw && s.in == ChannelSlice{b.c, 0} && sixteen &&
                         f.out_dtype == s.dtype && b.n == a.n && b.c == a.k && b.h == a.oh &&
                         b.w == a.ow && b.kh <= kMaxSecondWindow && b.kw <= kMaxSecondWindow &&
                         b.sh <= kMaxSecondStride && b.sw <= kMaxSecondStride && !s.out_nchw &&
                         !s.up && !s.b2b && is_storage_dtype(s.out_dtype) && s.slices_valid();
  const bool channels =
      a.k % 16 == 0 && a.k <= kMaxIntermediate && b.k % 8 == 0 && b.k <= kMaxOutput;
  return first_ok && second_ok && channels && b.n * b.oh * b.ow < (int64_t{1} << 31) &&
         a.n * a.c * a.h * a.w < (int64_t{1} << 40);
}

ScheduleSpace StemPairTemplate::space(const StemPairTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"th", "output rows per block tile", {1, 2, 4, 8, 16}});
  s.knobs.push_back({"tw", "output columns per block tile", {8, 16, 32, 64}});
  s.knobs.push_back({"warps", "warps per block", {2, 4, 8}});
  s.knobs.push_back({"pp", "first-conv pixels per thread at a time (FMA path)", {1, 2}});
  s.knobs.push_back({"mma", "first conv on tensor cores (the image rounded to 16 bits)", {0, 1}});
  return s;
}

bool StemPairTemplate::valid(const StemPairTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const Geometry geo(t, cfg);
  // The MMA path computes one m-tile at a time: pp is the FMA path's only.
  const bool first =
      cfg.get("mma") ? cfg.get("pp") == 1 : cfg.get("pp") * t.first.conv.k <= kMaxAccumulators;
  return geo.mt > 0 && geo.mt * geo.nt * 4 <= kMaxAccumulators && first &&
         geo.shared <= kMaxSharedBytes;
}

ScheduleConfig StemPairTemplate::default_config(const StemPairTask& t) {
  YOLOC_CHECK(matches(t), "stem pair template does not match {}", t.key());
  // 4 x 32 tiles of 8 warps: 200 blocks for a 160 x 160 output (YOLO's 640 x 640 input at
  // batch 1), one m-tile per warp; smaller ones where those do not fit.
  for (const auto& [th, tw, warps] :
       {std::tuple<int64_t, int64_t, int64_t>{4, 32, 8}, {2, 32, 4}, {2, 16, 2}}) {
    ScheduleConfig cfg({{"th", th}, {"tw", tw}, {"warps", warps}, {"pp", 1}, {"mma", 1}});
    if (valid(t, cfg)) return cfg;
  }
  // One m-tile per warp fits any matching task's accumulators (NT <= 16); the shared memory of
  // the smallest tiles holds the largest windows.
  ScheduleConfig cfg({{"th", 1}, {"tw", 32}, {"warps", 2}, {"pp", 1}, {"mma", 1}});
  YOLOC_CHECK(valid(t, cfg), "no stem pair config fits {}", t.key());
  return cfg;
}

CudaKernel StemPairTemplate::emit(const StemPairTask& t, const ScheduleConfig& cfg,
                                  const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "stem pair config {} invalid for {}", cfg.str(), t.key());
  const Geometry geo(t, cfg);
  const ConvTask& a = t.first.conv;
  const bool bf16 = t.second.dtype == DType::kBFloat16;
  const auto n = [](int64_t v) { return std::to_string(v); };
  CudaKernel k = conv_kernel(t.second, symbol, "stem pair ", cfg.str() + " first " + t.first.key(),
                             kStemPairKernel,
                             {{"@TH@", n(geo.th)},
                              {"@FIRST_CONV@", cfg.get("mma") ? kFirstConvMma : kFirstConvFma},
                              {"@PP@", n(cfg.get("pp"))},
                              {"@CVT@", bf16 ? "yc_float_to_bf16" : "yc_float_to_half"},
                              {"@TW@", n(geo.tw)},
                              {"@WARPS@", n(geo.warps)},
                              {"@XC@", n(a.c)},
                              {"@XH@", n(a.h)},
                              {"@XW@", n(a.w)},
                              {"@XKH@", n(a.kh)},
                              {"@XKW@", n(a.kw)},
                              {"@XSH@", n(a.sh)},
                              {"@XSW@", n(a.sw)},
                              {"@XPH@", n(a.ph)},
                              {"@XPW@", n(a.pw)},
                              {"@ACT0@", cuda_act_function(a.act, t.first.out_dtype)},
                              {"@MMA_FN@", bf16 ? "yc_mma_bf16" : "yc_mma_f16"}});
  const ConvTask& b = t.second.conv;
  k.grid = {static_cast<unsigned>(b.n * cpu::ceil_div(b.oh, geo.th) * cpu::ceil_div(b.ow, geo.tw)),
            1, 1};
  k.block = {static_cast<unsigned>(32 * geo.warps), 1, 1};
  k.shared_bytes = static_cast<unsigned>(geo.shared);
  return k;
}

Tensor StemPairTemplate::pack_first_weights(const StemPairTask& t, const float* oihw) {
  return tap_major_weights(t.first.conv, oihw, 1);
}

Tensor StemPairTemplate::pack_second_weights(const StemPairTask& t, const float* oihw) {
  const ConvTask& b = t.second.conv;
  const int64_t cc = b.c / 16, nt = b.k / 8, steps = b.kh * b.kw * cc;
  Tensor packed(DType::kFloat32, {steps, nt, 32, 4});
  float* p = packed.data<float>();
  for (int64_t ky = 0; ky < b.kh; ++ky)
    for (int64_t kx = 0; kx < b.kw; ++kx)
      for (int64_t c16 = 0; c16 < cc; ++c16)
        for (int64_t j = 0; j < nt; ++j)
          for (int64_t lane = 0; lane < 32; ++lane) {
            const int64_t step = (ky * b.kw + kx) * cc + c16;
            const int64_t col = j * 8 + lane / 4;
            for (int64_t e = 0; e < 4; ++e) {
              const int64_t c = c16 * 16 + 2 * (lane % 4) + (e & 1) + (e >> 1) * 8;
              p[((step * nt + j) * 32 + lane) * 4 + e] =
                  oihw[((col * b.c + c) * b.kh + ky) * b.kw + kx];
            }
          }
  return packed.cast(t.second.dtype);
}

}  // namespace yoloc::codegen::cuda
