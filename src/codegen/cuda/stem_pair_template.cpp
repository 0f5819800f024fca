#include "codegen/cuda/stem_pair_template.h"

#include <tuple>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
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
constexpr const char* kStemPairKernel = R"(enum : int {
  TH = @TH@, TW = @TW@, WARPS = @WARPS@, THREADS = 32 * WARPS,
  // The first conv: image channels, size, window, stride, padding; its K is C.
  XC = @XC@, XH = @XH@, XW = @XW@, XKH = @XKH@, XKW = @XKW@, XSH = @XSH@, XSW = @XSW@,
  XPH = @XPH@, XPW = @XPW@, XTAPS = XC * XKH * XKW,
  // The intermediate pixels the block's tile reads (the first conv's output, R x Q), and the
  // image pixels those read (IR x IQ); image column iq is stored at (iq % XSW) * PC + iq / XSW.
  R = (TH - 1) * SH + KH, Q = (TW - 1) * SW + KW,
  IR = (R - 1) * XSH + XKH, IQ = (Q - 1) * XSW + XKW, PC = (IQ + XSW - 1) / XSW, LDI = XSW * PC,
  KP = C + 4,  // halves per staged intermediate pixel (see the header)
  MT = TH * TW / 16 / WARPS, NT = K / 8, CC = C / 16, STEPS = KH * KW * CC,
  TILES_X = (OW + TW - 1) / TW, TILES_Y = (OH + TH - 1) / TH,
  IMAGE_WORDS = (XC * IR * LDI + 3) / 4 * 4, W0_WORDS = XTAPS * C, W1_WORDS = STEPS * NT * 32 * 2,
  PP = @PP@,  // first-conv pixels per thread at a time
  // Loads per thread: weights in 16-byte pieces, image words in batches of X_BATCH.
  W_LOADS = ((W0_WORDS + W1_WORDS) / 4 + THREADS - 1) / THREADS,
  X_LOADS = (XC * IR * IQ + THREADS - 1) / THREADS, X_BATCH = X_LOADS < 16 ? X_LOADS : 16
};
static_assert(MT * WARPS * 16 == TH * TW && C % 16 == 0 && K % 8 == 0, "stem pair geometry");
// The first conv's activation: its output is rounded to 16 bits next, so SiLU takes the fast
// exp and division.
YC_DEVICE float act0(float v) { return @ACT0@(v); }
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS)
    @SYM@(const float* __restrict__ x, const void* __restrict__ w0,
          const float* __restrict__ bias0, const void* __restrict__ w1,
          const float* __restrict__ bias1, void* y_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(float, yc_smem);
  OutT* y = static_cast<OutT*>(y_);
  float* si = yc_smem;                                           // [XC][IR][LDI]
  float* sw0 = si + IMAGE_WORDS;                                 // [XTAPS][C]
  yc_u32* sw1 = reinterpret_cast<yc_u32*>(sw0 + W0_WORDS);      // [STEPS][NT][32][2], after sw0
  InT* sm = reinterpret_cast<InT*>(sw1 + W1_WORDS);             // [R][Q][KP]
  const int tid = static_cast<int>(threadIdx.x);
  const int bx = static_cast<int>(blockIdx.x);
  const int img = bx / (TILES_X * TILES_Y);
  const int oy0 = bx / TILES_X % TILES_Y * TH, ox0 = bx % TILES_X * TW;
  const int ry0 = oy0 * SH - PH, rx0 = ox0 * SW - PW;      // first intermediate pixel
  const int iy0 = ry0 * XSH - XPH, ix0 = rx0 * XSW - XPW;  // first image pixel

  // 1. Weights (16-byte pieces) and the image tile, zeros outside the image: all of a batch's
  // loads before its stores, so that they are in flight at once (one after the other, the 30
  // loads a thread makes at 640 x 640 took about 15 us).
  {
    yc_vec<yc_u32, 4> wv[W_LOADS];
#pragma unroll
    for (int j = 0; j < W_LOADS; ++j) {
      const int i = tid + j * THREADS;
      if (i < W0_WORDS / 4) {
        wv[j] = static_cast<const yc_vec<yc_u32, 4>*>(w0)[i];
      } else if (i < (W0_WORDS + W1_WORDS) / 4) {
        wv[j] = static_cast<const yc_vec<yc_u32, 4>*>(w1)[i - W0_WORDS / 4];
      }
    }
#pragma unroll
    for (int j = 0; j < W_LOADS; ++j) {
      const int i = tid + j * THREADS;
      if (i < (W0_WORDS + W1_WORDS) / 4) reinterpret_cast<yc_vec<yc_u32, 4>*>(sw0)[i] = wv[j];
    }
  }
  const float* xi = x + static_cast<yc_i64>(img) * XC * XH * XW;
#pragma unroll
  for (int j0 = 0; j0 < X_LOADS; j0 += X_BATCH) {
    float v[X_BATCH];
#pragma unroll
    for (int j = 0; j < X_BATCH; ++j) {
      const int i = tid + (j0 + j) * THREADS;
      const int c = i / (IR * IQ), r = i / IQ % IR, q = i % IQ;
      const int gy = iy0 + r, gx = ix0 + q;
      v[j] = 0.f;
      if (j0 + j < X_LOADS && i < XC * IR * IQ &&
          static_cast<unsigned>(gy) < static_cast<unsigned>(XH) &&
          static_cast<unsigned>(gx) < static_cast<unsigned>(XW))
        v[j] = xi[(static_cast<yc_i64>(c) * XH + gy) * XW + gx];
    }
#pragma unroll
    for (int j = 0; j < X_BATCH; ++j) {
      const int i = tid + (j0 + j) * THREADS;
      const int c = i / (IR * IQ), r = i / IQ % IR, q = i % IQ;
      if (j0 + j < X_LOADS && i < XC * IR * IQ) si[(c * IR + r) * LDI + q % XSW * PC + q / XSW] = v[j];
    }
  }
  YC_SYNC();

@FIRST_CONV@  YC_SYNC();

  // 3. The second conv: warp w's m-tiles w + j * WARPS; row gq (and gq + 8) of an m-tile is tile
  // pixel 16 * mtile + gq, whose window starts at intermediate pixel (py * SH, px * SW).
  const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
  const yc_u32* smw = reinterpret_cast<const yc_u32*>(sm);
  int base[MT][2];
#pragma unroll
  for (int j = 0; j < MT; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = (warp + j * WARPS) * 16 + gq + 8 * h;
      base[j][h] = ((m / TW * SH) * Q + m % TW * SW) * (KP / 2) + tq;
    }
  }
  float acc[MT][NT][4];
#pragma unroll
  for (int j = 0; j < MT; ++j)
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][n][e] = 0.f;
#pragma unroll
  for (int ky = 0; ky < KH; ++ky) {
#pragma unroll
    for (int kx = 0; kx < KW; ++kx) {
#pragma unroll
      for (int cc = 0; cc < CC; ++cc) {
        const int step = (ky * KW + kx) * CC + cc;
        const int off = (ky * Q + kx) * (KP / 2) + cc * 8;
        yc_u32 b[NT][2];
#pragma unroll
        for (int n = 0; n < NT; ++n) {
          const yc_vec<yc_u32, 2> v =
              reinterpret_cast<const yc_vec<yc_u32, 2>*>(sw1)[(step * NT + n) * 32 + lane];
          b[n][0] = v.e[0];
          b[n][1] = v.e[1];
        }
#pragma unroll
        for (int j = 0; j < MT; ++j) {
          const yc_u32 a[4] = {smw[base[j][0] + off], smw[base[j][1] + off],
                               smw[base[j][0] + off + 4], smw[base[j][1] + off + 4]};
#pragma unroll
          for (int n = 0; n < NT; ++n) @MMA_FN@(acc[j][n], a, b[n]);
        }
      }
    }
  }

  // Accumulator e of n-tile n: pixel row gq (+8 for e >= 2), channels 2 * tq + e % 2.
  const OutT* no_res = nullptr;
  OutT* no_up = nullptr;
#pragma unroll
  for (int j = 0; j < MT; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = (warp + j * WARPS) * 16 + gq + 8 * h;
      const int oy = oy0 + m / TW, ox = ox0 + m % TW;
      if (oy >= OH || ox >= OW) continue;
      const int pixel = (img * OH + oy) * OW + ox;
#pragma unroll
      for (int n = 0; n < NT; ++n)
        epilogue2(y, no_up, no_res, bias1, pixel, n * 8 + 2 * tq, acc[j][n][2 * h],
                  acc[j][n][2 * h + 1]);
    }
  }
}
)";

// The first conv in fp32 FMAs (knob mma = 0): exact for float32 images and weights.
constexpr const char* kFirstConvFma =
    R"(  // 2. (FMA) The first conv on the R x Q intermediate pixels, PP pixels (THREADS apart) per
  // thread at a time: each weight read from shared memory feeds PP FMAs. Pixels outside the first conv's
  // output are computed too (their window lies in the staged tile) and then zeroed.
  for (int p0 = tid; p0 < R * Q; p0 += PP * THREADS) {
    float acc[PP][C];
    int at[PP];
#pragma unroll
    for (int u = 0; u < PP; ++u) {
      const int p = p0 + u * THREADS < R * Q ? p0 + u * THREADS : p0;
      at[u] = p / Q * XSH * LDI + p % Q;
#pragma unroll
      for (int k = 0; k < C; ++k) acc[u][k] = 0.f;
    }
#pragma unroll
    for (int c = 0; c < XC; ++c) {
#pragma unroll
      for (int ky = 0; ky < XKH; ++ky) {
#pragma unroll
        for (int kx = 0; kx < XKW; ++kx) {
          const int tap_at = (c * IR + ky) * LDI + kx % XSW * PC + kx / XSW;
          float v[PP];
#pragma unroll
          for (int u = 0; u < PP; ++u) v[u] = si[at[u] + tap_at];
          const float* wt = sw0 + ((c * XKH + ky) * XKW + kx) * C;
#pragma unroll
          for (int k4 = 0; k4 < C / 4; ++k4) {
            const yc_vec<float, 4> w4 = reinterpret_cast<const yc_vec<float, 4>*>(wt)[k4];
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
              for (int u = 0; u < PP; ++u)
                acc[u][4 * k4 + e] = fmaf(v[u], w4.e[e], acc[u][4 * k4 + e]);
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < PP; ++u) {
      const int p = p0 + u * THREADS;
      if (p >= R * Q) break;
      const int r = p / Q, q = p % Q;
      const bool inside = static_cast<unsigned>(ry0 + r) < static_cast<unsigned>(H) &&
                          static_cast<unsigned>(rx0 + q) < static_cast<unsigned>(W);
      InT* out = sm + p * KP;
#pragma unroll
      for (int k = 0; k < C; k += 2) {
        yc_store2(out + k, inside ? act0(acc[u][k] + bias0[k]) : 0.f,
                  inside ? act0(acc[u][k + 1] + bias0[k + 1]) : 0.f);
      }
    }
  }
)";

// The first conv on tensor cores (mma = 1).
constexpr const char* kFirstConvMma =
    R"(  // 2. (MMA) The first conv on the R x Q intermediate pixels as a GEMM of 16-pixel m-tiles (pixel
  // p = 16 * tile + row) x C channels x its taps in 16-deep steps (the last one zero-padded), warp
  // w taking the m-tiles w, w + WARPS, ...: a lane's taps, so their places in the tile and its
  // weight fragments, are the same in every m-tile and computed once; its A fragments are gathered
  // from the staged image (rounded to the 16-bit type, as the direct template's MMA path does).
  {
    enum : int { MT0 = (R * Q + 15) / 16, KS0 = (XTAPS + 15) / 16, NT0 = C / 8 };
    const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
    int koff[KS0][4];
    yc_u32 bw[KS0][NT0][2];
#pragma unroll
    for (int ks = 0; ks < KS0; ++ks) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int k = ks * 16 + 2 * tq + (e & 1) + (e >> 1) * 8;
        const int c = k / (XKH * XKW), ky = k / XKW % XKH, kx = k % XKW;
        koff[ks][e] = k < XTAPS ? (c * IR + ky) * LDI + kx % XSW * PC + kx / XSW : 0;
      }
#pragma unroll
      for (int nt = 0; nt < NT0; ++nt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int k = ks * 16 + 2 * tq + 8 * h, n = nt * 8 + gq;
          const float lo = k < XTAPS ? sw0[k * C + n] : 0.f;
          const float hi = k + 1 < XTAPS ? sw0[(k + 1) * C + n] : 0.f;
          bw[ks][nt][h] = static_cast<yc_u32>(@CVT@(lo)) | static_cast<yc_u32>(@CVT@(hi)) << 16;
        }
      }
    }
    for (int tile = warp; tile < MT0; tile += WARPS) {
      int at[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int p = 16 * tile + gq + 8 * h < R * Q ? 16 * tile + gq + 8 * h : R * Q - 1;
        at[h] = p / Q * XSH * LDI + p % Q;
      }
      float acc[NT0][4];
#pragma unroll
      for (int nt = 0; nt < NT0; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < KS0; ++ks) {
        const auto pair = [&](int h, int e0) {
          return static_cast<yc_u32>(@CVT@(si[at[h] + koff[ks][e0]])) |
                 static_cast<yc_u32>(@CVT@(si[at[h] + koff[ks][e0 + 1]])) << 16;
        };
        const yc_u32 a[4] = {pair(0, 0), pair(1, 0), pair(0, 2), pair(1, 2)};
#pragma unroll
        for (int nt = 0; nt < NT0; ++nt) @MMA_FN@(acc[nt], a, bw[ks][nt]);
      }
      // Accumulator e of n-tile nt: pixel row gq (+8 for e >= 2), channels 2 * tq + e % 2.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int p = 16 * tile + gq + 8 * h;
        if (p >= R * Q) continue;
        const int r = p / Q, q = p % Q;
        const bool inside = static_cast<unsigned>(ry0 + r) < static_cast<unsigned>(H) &&
                            static_cast<unsigned>(rx0 + q) < static_cast<unsigned>(W);
#pragma unroll
        for (int nt = 0; nt < NT0; ++nt) {
          const int n = nt * 8 + 2 * tq;
          yc_store2(sm + p * KP + n, inside ? act0(acc[nt][2 * h] + bias0[n]) : 0.f,
                    inside ? act0(acc[nt][2 * h + 1] + bias0[n + 1]) : 0.f);
        }
      }
    }
  }
)";

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
