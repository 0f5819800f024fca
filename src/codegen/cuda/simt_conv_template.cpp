#include "codegen/cuda/simt_conv_template.h"

#include <algorithm>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxStaticShared = 48 * 1024;  // no opt-in needed below this
constexpr int64_t kTargetBlocks = 128;

int64_t shared_bytes(int64_t bm, int64_t bn, int64_t bk) { return (bk * (bm + 4) + bk * bn) * 4; }

// The kernel after the common declarations of conv_common_source (in the same namespace).
constexpr const char* kSimtKernel = R"(enum : int {
  BM = @BM@, BN = @BN@, BK = @BK@, TM = @TM@, TN = @TN@,
  TX = BN / TN, TY = BM / TM, THREADS = TY * TX,
  // A is stored depth-major [BK][LDA]; +4 keeps rows 16-byte aligned while moving consecutive
  // depth rows to other banks.
  LDA = BM + 4,
  KT = (KG + BK - 1) / BK,
  A_ELEMS = BM * BK, B_ELEMS = BK * BN,
  A_ITERS = (A_ELEMS + THREADS - 1) / THREADS,
  B_ITERS = (B_ELEMS + THREADS - 1) / THREADS,
  OUTSIDE = -(1 << 28)  // input row of a pixel past M: every tap is out of bounds
};
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS)
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(float, yc_smem);
  const float* __restrict__ x = static_cast<const float*>(x_);
  const float* __restrict__ w = static_cast<const float*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  float* sa = yc_smem;
  float* sb = yc_smem + BK * LDA;
  // Thread (tx, ty) computes channels tx * TN + j of pixels row(i). NHWC: consecutive threads
  // take consecutive channel groups and a thread TM adjacent pixels. NCHW output: consecutive
  // threads take consecutive pixels (pixel i * TY + ty), so that each of the epilogue's stores
  // writes a run of one channel plane.
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = OUT_NCHW ? tid / TY : tid % TX, ty = OUT_NCHW ? tid % TY : tid / TX;
  const auto row = [ty](int i) { return OUT_NCHW ? i * TY + ty : ty * TM + i; };
  const int m0 = static_cast<int>(blockIdx.x) * BM, n0 = static_cast<int>(blockIdx.y) * BN;

  // Consecutive threads load consecutive depth indices (channels of one pixel: coalesced); the
  // pixel and depth column of each element a thread loads are the same at every step.
  yc_i64 base[A_ITERS];
  int ih0[A_ITERS], iw0[A_ITERS];
#pragma unroll
  for (int j = 0; j < A_ITERS; ++j) {
    const int i = tid + j * THREADS, m = m0 + i / BK;
    base[j] = 0;
    ih0[j] = iw0[j] = OUTSIDE;
    if (i < A_ELEMS && m < M) {
      const int img = m / (OH * OW), p = m % (OH * OW), oh = p / OW, ow = p % OW;
      base[j] = static_cast<yc_i64>(img) * H * W * IS + IO;
      ih0[j] = oh * SH - PH;
      iw0[j] = ow * SW - PW;
    }
  }

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
    for (int j = 0; j < A_ITERS; ++j) {
      const int i = tid + j * THREADS;
      if (A_ELEMS % THREADS != 0 && i >= A_ELEMS) break;
      const int row = i / BK, kc = i % BK, kk = kt * BK + kc;
      const int c = kk % C, rs = kk / C, s = rs % KW, r = rs / KW;
      const int ih = ih0[j] + r * DH, iw = iw0[j] + s * DW;
      const bool ok = kk < KG && static_cast<unsigned>(ih) < static_cast<unsigned>(H) &&
                      static_cast<unsigned>(iw) < static_cast<unsigned>(W);
      sa[kc * LDA + row] = ok ? x[base[j] + (static_cast<yc_i64>(ih) * W + iw) * IS + c] : 0.f;
    }
#pragma unroll
    for (int j = 0; j < B_ITERS; ++j) {
      const int i = tid + j * THREADS;
      if (B_ELEMS % THREADS != 0 && i >= B_ELEMS) break;
      const int kr = i / BN, nc = i % BN, n = n0 + nc, kk = kt * BK + kr;
      sb[kr * BN + nc] = n < K && kk < KG ? w[static_cast<yc_i64>(kk) * K + n] : 0.f;
    }
    YC_SYNC();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = sa[k * LDA + row(i)];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = sb[k * BN + tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The next step overwrites the tiles.
    YC_SYNC();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + row(i);
    if constexpr (TN % 2 == 0) {
#pragma unroll
      for (int j = 0; j < TN; j += 2) {
        epilogue2(y, up, res, bias, m, n0 + tx * TN + j, acc[i][j], acc[i][j + 1]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < TN; ++j) epilogue(y, up, res, bias, m, n0 + tx * TN + j, acc[i][j]);
    }
  }
}
)";

}  // namespace

bool SimtConvTemplate::matches(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  const bool out_ok = task.out_dtype == DType::kFloat32 || task.out_dtype == DType::kFloat16 ||
                      task.out_dtype == DType::kBFloat16;
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) &&
                    t.kh * t.kw * t.c < (int64_t{1} << 30) && t.n * t.h * t.w < (int64_t{1} << 31);
  return sizes && t.groups == 1 && task.dtype == DType::kFloat32 && out_ok && task.slices_valid() &&
         fits && !task.in_nchw;
}

ScheduleSpace SimtConvTemplate::space(const CudaConvTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"bm", "output pixels per block tile", {32, 64, 128}});
  s.knobs.push_back({"bn", "output channels per block tile", {16, 32, 64, 128}});
  s.knobs.push_back({"bk", "GEMM depth per shared-memory step", {8, 16, 32}});
  s.knobs.push_back({"tm", "output pixels per thread", {1, 2, 4, 8}});
  s.knobs.push_back({"tn", "output channels per thread", {1, 2, 4, 8}});
  return s;
}

bool SimtConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t tm = cfg.get("tm"), tn = cfg.get("tn");
  if (bm % tm != 0 || bn % tn != 0) return false;
  const int64_t threads = (bm / tm) * (bn / tn);
  return threads >= 64 && threads <= 512 && threads % 32 == 0 &&
         shared_bytes(bm, bn, bk) <= kMaxStaticShared;
}

ScheduleConfig SimtConvTemplate::default_config(const CudaConvTask& t) {
  YOLOC_CHECK(matches(t), "SIMT conv template does not match {}", t.key());
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow, k = t.conv.k;
  const int64_t bn = k <= 16 ? 16 : k <= 32 ? 32 : 64;
  // 16 threads across the channels, 4 pixels each; half the pixels when the grid is small.
  const int64_t blocks64 = cpu::ceil_div(m, 64) * cpu::ceil_div(k, bn);
  const int64_t bm = blocks64 < kTargetBlocks ? 32 : 64;
  ScheduleConfig cfg({{"bm", bm}, {"bn", bn}, {"bk", 16}, {"tm", 4}, {"tn", bn / 16}});
  YOLOC_CHECK(valid(t, cfg), "default SIMT conv config {} invalid for {}", cfg.str(), t.key());
  return cfg;
}

CudaKernel SimtConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                  const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "SIMT conv config {} invalid for {}", cfg.str(), t.key());
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t tm = cfg.get("tm"), tn = cfg.get("tn");
  CudaKernel k = conv_kernel(t, symbol, "", cfg.str(), kSimtKernel,
                             {{"@BM@", std::to_string(bm)},
                              {"@BN@", std::to_string(bn)},
                              {"@BK@", std::to_string(bk)},
                              {"@TM@", std::to_string(tm)},
                              {"@TN@", std::to_string(tn)}});
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow;
  k.grid = {static_cast<unsigned>(cpu::ceil_div(m, bm)),
            static_cast<unsigned>(cpu::ceil_div(t.conv.k, bn)), 1};
  k.block = {static_cast<unsigned>((bm / tm) * (bn / tn)), 1, 1};
  k.shared_bytes = static_cast<unsigned>(shared_bytes(bm, bn, bk));
  return k;
}

Tensor SimtConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  const ConvTask& t = task.conv;
  const int64_t depth = t.kh * t.kw * t.c;
  Tensor packed(DType::kFloat32, {depth, t.k});
  float* p = packed.data<float>();
  for (int64_t n = 0; n < t.k; ++n)
    for (int64_t r = 0; r < t.kh; ++r)
      for (int64_t s = 0; s < t.kw; ++s)
        for (int64_t c = 0; c < t.c; ++c)
          p[((r * t.kw + s) * t.c + c) * t.k + n] = oihw[((n * t.c + c) * t.kh + r) * t.kw + s];
  return packed;
}

}  // namespace yoloc::codegen::cuda
