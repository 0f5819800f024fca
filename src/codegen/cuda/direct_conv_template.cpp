#include "codegen/cuda/direct_conv_template.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxTaps = 256;          // C*KH*KW: the window loop is unrolled completely
constexpr int64_t kMaxStride = 4;          // bounds the input tile of a block (see matches)
constexpr int64_t kMaxExtent = 16;         // (KH - 1) * DH + 1 and the same for columns
constexpr int64_t kMaxAccumulators = 64;   // FMA path: fp32 registers per thread
constexpr int64_t kMaxMmaRegisters = 128;  // MMA path: fragments, depth places, accumulators
constexpr int64_t kMinThreads = 32, kMaxThreads = 512;
constexpr int64_t kTargetBlocks = 264;  // about two per multiprocessor of an H100 / H200
constexpr int64_t kWeightRow = 64;      // KP: K rounded up to this (KB divides it)

int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// The sizes a config gives a block (the enumerators of the kernel, computed the same way).
struct Geometry {
  int64_t tw, th, pt, kb, tn, mma;
  int64_t gn, ty, threads;  // channel groups, thread (m-tile) rows, threads of a block
  int64_t iht, iwt;         // input tile rows and columns
  int64_t pc, ld, cs;       // columns per phase, words per stored tile row and channel
  int64_t lw;               // loader threads per tile row
  int64_t taps, shared;     // window taps, shared-memory bytes
  // Pairs path (knob pairs): the tile stored as the image's 16-bit values from column iw0 - off
  // (a multiple of 8); each (channel, window row) read as pairs of adjacent columns kx0 + 2j,
  // kx0 + 2j + 1 (j < ppr; kx0 = -1 when off is odd: every pair starts at an even place), one
  // 32-bit word each; rows of ldh halves, channels csh halves apart.
  int64_t pairs = 0, off = 0, kx0 = 0, ppr = 0, np = 0, ldh0 = 0, ldh = 0, csh = 0;

  Geometry(const CudaConvTask& task, int64_t tw_, int64_t th_, int64_t pt_, int64_t kb_,
           int64_t tn_, int64_t mma_)
      : tw(tw_), th(th_), pt(pt_), kb(kb_), tn(tn_), mma(mma_) {
    const ConvTask& t = task.conv;
    gn = kb / tn;
    ty = th / pt;
    threads = mma ? 32 * gn * (tw / 16) * ty : gn * tw * ty;
    iht = (th - 1) * t.sh + (t.kh - 1) * t.dh + 1;
    iwt = (tw - 1) * t.sw + (t.kw - 1) * t.dw + 1;
    pc = cpu::ceil_div(iwt, t.sw);
    // A warp whose threads span several tile rows (tw * gn < 32 of them per row) reads, at a
    // tap, words ty * SH * LD + tx: without bank conflicts when SH * LD = TW (mod 32).
    ld = t.sw * pc;
    if (tw * gn < 32) {
      for (int64_t l = ld; l < t.sw * pc + 32; ++l) {
        if ((t.sh * l - tw) % 32 == 0) {
          ld = l;
          break;
        }
      }
    }
    cs = iht * ld;
    lw = std::min<int64_t>(32, pow2_ceil(iwt));
    taps = t.c * t.kh * t.kw;
    // MMA path: at most what spread_mma_reads may add.
    shared = (taps * kb + t.c * (mma ? iht * (ld + 31) + 31 : cs)) * 4;
  }

  // MMA path: the row and channel strides of the stored tile (LD in [SW*PC, SW*PC + 32), CS in
  // [IHT*LD, IHT*LD + 32)) with the fewest shared-memory wavefronts over a warp's A-fragment
  // reads. Lane (gq, tq) of a read is at pixel word XS * gq (+ the warp's base) plus the place of
  // its depth index 16*ks + 2*tq + {0, 1, 8, 9}: the four places, depending on the strides, may put
  // the lanes of different tq on the same banks (4 ways for the stem with dense strides).
  void spread_mma_reads(const ConvTask& t) {
    int64_t best = -1;
    const int64_t ld0 = t.sw * pc, xs = tw / 16;
    for (int64_t l = ld0; l < ld0 + 32; ++l) {
      for (int64_t c = iht * l; c < iht * l + 32; ++c) {
        int64_t cost = 0;
        for (int64_t ks = 0; ks * 16 < taps && (best < 0 || cost < best); ++ks) {
          for (int64_t e = 0; e < 4; ++e) {
            int64_t places[4];
            for (int64_t tq = 0; tq < 4; ++tq) {
              const int64_t k = ks * 16 + 2 * tq + (e & 1) + (e >> 1) * 8;
              const int64_t ch = k / (t.kh * t.kw), r = k / t.kw % t.kh, sc = k % t.kw;
              places[tq] =
                  k < taps ? ch * c + r * t.dh * l + sc * t.dw % t.sw * pc + sc * t.dw / t.sw : 0;
            }
            // Wavefronts: the most distinct words on one bank (equal words are broadcast).
            int64_t banks[32] = {};
            for (int64_t tq = 0; tq < 4; ++tq) {
              if (std::find(places, places + tq, places[tq]) != places + tq) continue;
              for (int64_t gq = 0; gq < 8; ++gq) ++banks[(places[tq] + xs * gq) % 32];
            }
            cost += *std::max_element(banks, banks + 32);
          }
        }
        if (best < 0 || cost < best) {
          best = cost;
          ld = l;
          cs = c;
        }
      }
    }
    shared = (taps * kb + t.c * cs) * 4;
  }
  explicit Geometry(const CudaConvTask& task, const ScheduleConfig& cfg)
      : Geometry(task, cfg.get("tw"), cfg.get("th"), cfg.get("pt"), cfg.get("kb"), cfg.get("tn"),
                 cfg.get("mma")) {
    if (cfg.get("pairs") == 1) set_pairs(task.conv);
  }

  // The pairs path's sizes, and the strides (ldh, csh: multiples of 8 halves, for 16-byte
  // stores) with the fewest shared-memory wavefronts over a warp's A reads: lane (gq, tq) reads
  // word XS * SW / 2 * gq plus the place of pair 8 * ks + 4 * h + tq.
  void set_pairs(const ConvTask& t) {
    pairs = 1;
    off = (8 - t.pw % 8) % 8;  // iw0 = ox0 * SW - PW with ox0 * SW a multiple of 32
    kx0 = off % 2 == 0 ? 0 : -1;
    ppr = cpu::ceil_div(t.kw - kx0, 2);
    np = t.c * t.kh * ppr;
    // The halves a row loads: the tile's columns and the last pair's second place.
    ldh0 = cpu::ceil_div(std::max(off + iwt, t.sw * (tw - 1) + kx0 + 2 * ppr + off), 8) * 8;
    const int64_t xs = tw / 16 * (t.sw / 2);
    int64_t best = -1;
    for (int64_t l = ldh0; l < ldh0 + 64; l += 8) {
      for (int64_t c = iht * l; c < iht * l + 64; c += 8) {
        int64_t cost = 0;
        for (int64_t p0 = 0; p0 < np && (best < 0 || cost < best); p0 += 4) {
          int64_t banks[32] = {};
          std::vector<int64_t> words;
          for (int64_t tq = 0; tq < 4 && p0 + tq < np; ++tq) {
            const int64_t p = p0 + tq, ch = p / (t.kh * ppr), r = p / ppr % t.kh, j = p % ppr;
            for (int64_t gq = 0; gq < 8; ++gq)
              words.push_back((ch * c + r * t.dh * l + kx0 + 2 * j + off) / 2 + xs * gq);
          }
          std::sort(words.begin(), words.end());
          words.erase(std::unique(words.begin(), words.end()), words.end());
          for (int64_t w : words) ++banks[w % 32];
          cost += *std::max_element(banks, banks + 32);
        }
        if (best < 0 || cost < best) {
          best = cost;
          ldh = l;
          csh = c;
        }
      }
    }
    shared = taps * kb * 4 + t.c * csh * 2;
  }

  // MMA path: weight fragments, depth places and accumulators per thread.
  int64_t mma_registers() const {
    if (pairs) {
      const int64_t ks = cpu::ceil_div(2 * np, 16), nt = tn / 8;
      return ks * nt * 2 + ks * 2 + pt * nt * 4;
    }
    const int64_t ks = cpu::ceil_div(taps, 16), nt = tn / 8;
    return ks * nt * 2 + ks * 4 + pt * nt * 4;
  }

  int64_t blocks(const ConvTask& t) const {
    return t.n * cpu::ceil_div(t.oh, th) * cpu::ceil_div(t.ow, tw) * cpu::ceil_div(t.k, kb);
  }
};

// The input tile of the FMA and MMA paths, fp32 in shared memory (its columns phase-split).
constexpr const char* kScalarTile =
    R"(  // The input tile, zeros outside the image: thread (lw, lr) copies tile columns lw + q * LW of
  // tile rows lr + j * LR of every channel. Its columns' validity and places are the same in
  // every row, and its reads are at fixed distances from one address. RB rows at a time, all
  // their loads before their stores and without branches: so many loads are in flight at once.
  {
    const int lw = tid % LW, lr = tid / LW;
    bool col_ok[QC], col_in[QC];
    int col_at[QC];
#pragma unroll
    for (int q = 0; q < QC; ++q) {
      const int ic = lw + q * LW;
      // Past the tile's columns the phase layout would land on other columns' words.
      col_in[q] = IWT % LW == 0 || ic < IWT;
      col_ok[q] = col_in[q] && static_cast<unsigned>(iw0 + ic) < static_cast<unsigned>(W);
      col_at[q] = ic % SW * PC + ic / SW;
    }
    const yc_i64 xo =
        NCHW_IN ? (static_cast<yc_i64>(img) * C * H + ih0 + lr) * W + iw0 + lw
                : ((static_cast<yc_i64>(img) * H + ih0 + lr) * W + iw0 + lw) * IS + IO;
#pragma unroll
    for (int j0 = 0; j0 < QR; j0 += RB) {
      float v[RB][QC][C];
#pragma unroll
      for (int j = 0; j < RB; ++j) {
        const int row = lr + (j0 + j) * LR;
        const bool row_ok = j0 + j < QR && (IHT % LR == 0 || row < IHT) &&
                            static_cast<unsigned>(ih0 + row) < static_cast<unsigned>(H);
#pragma unroll
        for (int q = 0; q < QC; ++q) {
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const yc_i64 at = NCHW_IN ? (static_cast<yc_i64>(c) * H + (j0 + j) * LR) * W + q * LW
                                      : (static_cast<yc_i64>(j0 + j) * LR * W + q * LW) * IS + c;
            v[j][q][c] = 0.f;
            if (row_ok && col_ok[q]) v[j][q][c] = yc_load(x + (xo + at));
          }
        }
      }
#pragma unroll
      for (int j = 0; j < RB; ++j) {
        const int row = lr + (j0 + j) * LR;
        const bool row_in = j0 + j < QR && (IHT % LR == 0 || row < IHT);
#pragma unroll
        for (int q = 0; q < QC; ++q) {
#pragma unroll
          for (int c = 0; c < C; ++c) {
            if (row_in && col_in[q]) si[c * CS + row * LD + col_at[q]] = v[j][q][c];
          }
        }
      }
    }
  }
)";

// The pairs path's tile (Geometry::set_pairs): the image's rows copied as they are stored, in
// 16-byte pieces from column iw0 - OFF, a multiple of 8 as W is: a piece lies all in the image or
// all outside it (zeros).
constexpr const char* kPairsTile = R"(  {
    enum : int { CPR = LDH0 / 8, PIECES = C * IHT * CPR, BATCH = 8 };
    yc_u16* st = reinterpret_cast<yc_u16*>(si);
    const yc_u16* xs = reinterpret_cast<const yc_u16*>(x);
    const int col0 = iw0 - OFF;
#pragma unroll
    for (int j0 = 0; j0 < PIECES; j0 += BATCH * THREADS) {
      yc_vec<yc_u32, 4> v[BATCH];
#pragma unroll
      for (int j = 0; j < BATCH; ++j) {
        const int i = j0 + j * THREADS + tid;
        const int c = i / (IHT * CPR), r = i / CPR % IHT, gx = col0 + i % CPR * 8;
        const int gy = ih0 + r;
        v[j] = {{0u, 0u, 0u, 0u}};
        if (i < PIECES && static_cast<unsigned>(gy) < static_cast<unsigned>(H) &&
            static_cast<unsigned>(gx) < static_cast<unsigned>(W)) {
          v[j] = *reinterpret_cast<const yc_vec<yc_u32, 4>*>(
              xs + ((static_cast<yc_i64>(img) * C + c) * H + gy) * W + gx);
        }
      }
#pragma unroll
      for (int j = 0; j < BATCH; ++j) {
        const int i = j0 + j * THREADS + tid;
        if (i < PIECES) {
          *reinterpret_cast<yc_vec<yc_u32, 4>*>(st + i / (IHT * CPR) * CSH +
                                                i / CPR % IHT * LDH + i % CPR * 8) = v[j];
        }
      }
    }
  }
)";

// The kernel after the common declarations of conv_common_source (in the same namespace). See the
// header for the scheme; the comments here say why.
constexpr const char* kDirectKernel = R"(typedef @XT@ XT;  // input storage
enum : int {
  TW = @TW@, TH = @TH@, PT = @PT@, KB = @KB@, TN = @TN@,
  MMA = @MMA@,  // tensor-core tiles (else FMAs)
  // Channel groups and thread (FMA) or m-tile (MMA: 16 pixels of a tile row) rows of a block.
  GN = KB / TN, TY = TH / PT,
  THREADS = MMA ? 32 * GN * (TW / 16) * TY : GN * TW * TY,
  NCHW_IN = @NCHW_IN@,  // x: dense NCHW XT, the image (else NHWC XT in its slice)
  TAPS = C * KH * KW,
  KP = (K + 63) / 64 * 64,  // weights per tap in the packed layout
  // The input tile: the image rows and columns the block's output tile reads.
  IHT = (TH - 1) * SH + (KH - 1) * DH + 1,
  IWT = (TW - 1) * SW + (KW - 1) * DW + 1,
  // Tile column ic is stored at (ic % SW) * PC + ic / SW: at a tap, consecutive output columns
  // read consecutive words.
  PC = (IWT + SW - 1) / SW,
  LD = @LD@, CS = @CS@,  // words per stored tile row and channel
  // The pairs path (Geometry::set_pairs): OFF, KX0, pairs per window row, halves a row loads
  // (LDH0) and holds (LDH), halves per channel.
  OFF = @OFF@, KX0 = @KX0@, PPR = @PPR@, LDH0 = @LDH0@, LDH = @LDH@, CSH = @CSH@,
  TILES_X = (OW + TW - 1) / TW, TILES_Y = (OH + TH - 1) / TH,
  // The loader: LW consecutive threads per tile row, LR rows at a time.
  LW = @LW@, LR = THREADS / LW,
  QC = (IWT + LW - 1) / LW, QR = (IHT + LR - 1) / LR,
  // Rows per batch of loads: about 40 values in registers.
  RB = 40 / (QC * C) < 1 ? 1 : 40 / (QC * C) < QR ? 40 / (QC * C) : QR,
  W_PIECES = TAPS * KB / 4, W_ITERS = (W_PIECES + THREADS - 1) / THREADS
};
static_assert(THREADS % LW == 0 && KB % 4 == 0 && TN % 4 == 0, "direct conv geometry");
// The MMA paths' accumulators, zeroed.
template <int P, int Q>
YC_DEVICE void zero_acc(float (&acc)[P][Q][4]) {
#pragma unroll
  for (int i = 0; i < P; ++i)
#pragma unroll
    for (int j = 0; j < Q; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS)
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(float, yc_smem);
  const XT* __restrict__ x = static_cast<const XT*>(x_);
  const float* __restrict__ w = static_cast<const float*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  float* sw = yc_smem;              // [TAPS][KB]
  float* si = yc_smem + TAPS * KB;  // [C][CS]: [IHT][LD] and padding
  const int tid = static_cast<int>(threadIdx.x);
  const int bx = static_cast<int>(blockIdx.x), n0 = static_cast<int>(blockIdx.y) * KB;
  const int img = bx / (TILES_X * TILES_Y);
  const int oy0 = bx / TILES_X % TILES_Y * TH, ox0 = bx % TILES_X * TW;
  const int ih0 = oy0 * SH - PH, iw0 = ox0 * SW - PW;

  // The block's channels of every tap, in 16-byte pieces.
#pragma unroll
  for (int j = 0; j < W_ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (W_PIECES % THREADS != 0 && i >= W_PIECES) break;
    const int tap = i / (KB / 4), k = i % (KB / 4) * 4;
    *reinterpret_cast<yc_vec<float, 4>*>(sw + tap * KB + k) =
        *reinterpret_cast<const yc_vec<float, 4>*>(w + (static_cast<yc_i64>(tap) * KP + n0 + k));
  }
@TILE@  YC_SYNC();

@COMPUTE@}
)";

// The FMA path: thread (g, tx, ty) computes pixels (ty + i * TY, tx), i < PT, of the tile x
// channels n0 + g * TN ... in fp32.
constexpr const char* kFmaCompute =
    R"(  const int g = tid % GN, tx = tid / GN % TW, ty = tid / GN / TW;
  const float* wg = sw + g * TN;
  const float* ip = si + ty * SH * LD + tx;
  float acc[PT][TN];
#pragma unroll
  for (int i = 0; i < PT; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
#pragma unroll
  for (int c = 0; c < C; ++c) {
#pragma unroll
    for (int r = 0; r < KH; ++r) {
#pragma unroll
      for (int s = 0; s < KW; ++s) {
        const int tap = (c * KH + r) * KW + s;
        float wv[TN];
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
          const yc_vec<float, 4> w4 =
              *reinterpret_cast<const yc_vec<float, 4>*>(wg + tap * KB + 4 * q);
#pragma unroll
          for (int e = 0; e < 4; ++e) wv[4 * q + e] = w4.e[e];
        }
#pragma unroll
        for (int i = 0; i < PT; ++i) {
          const float v =
              ip[c * CS + (i * TY * SH + r * DH) * LD + s * DW % SW * PC + s * DW / SW];
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(v, wv[j], acc[i][j]);
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < PT; ++i) {
    const int oy = oy0 + ty + i * TY, ox = ox0 + tx;
    if (oy < OH && ox < OW) {
      epilogue_vec<TN>(y, up, res, bias, (img * OH + oy) * OW + ox, n0 + g * TN, acc[i]);
    }
  }
)";

// The MMA paths' epilogue.
constexpr const char* kMmaEpilogue =
    R"(  // Accumulator e of n-tile nt: pixel row gq (+8 for e >= 2), channels 2 * tq + e % 2.
#pragma unroll
  for (int i = 0; i < PT; ++i) {
    const int oy = oy0 + ty + i * TY;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ox = ox0 + mx + XS * (gq + 8 * h);
      if (oy >= OH || ox >= OW) continue;
      const int m = (img * OH + oy) * OW + ox;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        epilogue2(y, up, res, bias, m, n0 + g * TN + nt * 8 + 2 * tq, acc[i][nt][2 * h],
                  acc[i][nt][2 * h + 1]);
      }
    }
  }
)";

// The MMA path: warp (g, mx, ty) computes the m-tiles (16 pixels of a tile row) (ty + i * TY,
// columns mx + XS * j, j < 16), i < PT, x channels n0 + g * TN ... with mma.m16n8k16 over the taps
// in 16-deep steps (fp16 or bf16 operands, fp32 accumulators). A lane's depth indices are the same
// in every m-tile: their places in the tile are computed once, and so are its weight fragments.
// Depth past the taps has zero weights; its A elements read the pixel's first tap (finite, and
// in its window anyway).
constexpr const char* kMmaCompute =
    R"(  enum : int { KS = (TAPS + 15) / 16, NT = TN / 8, XS = TW / 16 };
  const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
  const int g = warp % GN, mx = warp / GN % (TW / 16), ty = warp / GN / (TW / 16);
  yc_u32 bf[KS][NT][2];
  int koff[KS][4];  // depth ks * 16 + 2 * tq + {0, 1, 8, 9}
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int k = ks * 16 + 2 * tq + (e & 1) + (e >> 1) * 8;
      const int c = k / (KH * KW), r = k / KW % KH, s = k % KW;
      koff[ks][e] = k < TAPS ? c * CS + r * DH * LD + s * DW % SW * PC + s * DW / SW : 0;
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int n = g * TN + nt * 8 + gq;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = ks * 16 + 2 * tq + 8 * h;
        const float w0 = k < TAPS ? sw[k * KB + n] : 0.f;
        const float w1 = k + 1 < TAPS ? sw[(k + 1) * KB + n] : 0.f;
        bf[ks][nt][h] = static_cast<yc_u32>(@CVT@(w0)) | static_cast<yc_u32>(@CVT@(w1)) << 16;
      }
    }
  }
  // Row i of m-tile mx is tile column mx + XS * i (the XS m-tiles of a tile row interleaved: the
  // lanes' words spread over more banks); row gq + 8 is 8 * XS words after row gq.
  const float* ip = si + ty * SH * LD + mx + XS * gq;
  float acc[PT][NT][4];
  zero_acc(acc);
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
#pragma unroll
    for (int i = 0; i < PT; ++i) {
      const float* p = ip + i * TY * SH * LD;
      const auto pair = [&](int e0, int row) {
        return static_cast<yc_u32>(@CVT@(p[koff[ks][e0] + row])) |
               static_cast<yc_u32>(@CVT@(p[koff[ks][e0 + 1] + row])) << 16;
      };
      const yc_u32 a[4] = {pair(0, 0), pair(0, 8 * XS), pair(2, 0), pair(2, 8 * XS)};
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) @MMA_FN@(acc[i][nt], a, bf[ks][nt]);
    }
  }

@MMA_EPILOGUE@)";

// The pairs path: the MMA path's warps and fragments, its depth the pairs (channel, window row,
// j) of Geometry::set_pairs in that order (P of them, zero-padded to 16-deep steps): A's pair of
// a lane is one 32-bit word of the tile, B's weights of taps outside the window are zeros.
constexpr const char* kPairsCompute =
    R"(  enum : int { NP = C * KH * PPR, KS = (2 * NP + 15) / 16, NT = TN / 8, XS = TW / 16 };
  const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
  const int g = warp % GN, mx = warp / GN % (TW / 16), ty = warp / GN / (TW / 16);
  yc_u32 bf[KS][NT][2];
  int koff[KS][2];  // words of pairs 8 * ks + tq (depth 2 * tq, + 1) and 8 * ks + 4 + tq
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = 8 * ks + 4 * h + tq;
      const int c = p / (KH * PPR), r = p / PPR % KH, j = p % PPR;
      koff[ks][h] = p < NP ? (c * CSH + r * DH * LDH + KX0 + 2 * j + OFF) / 2 : 0;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int n = g * TN + nt * 8 + gq;
        float w[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int s = KX0 + 2 * j + e;
          w[e] = p < NP && s >= 0 && s < KW ? sw[((c * KH + r) * KW + s) * KB + n] : 0.f;
        }
        bf[ks][nt][h] = static_cast<yc_u32>(@CVT@(w[0])) | static_cast<yc_u32>(@CVT@(w[1])) << 16;
      }
    }
  }
  // Row i of m-tile mx is tile column mx + XS * i, as in the MMA path; row gq + 8 is 8 * XS
  // columns after row gq.
  const yc_u32* ip = reinterpret_cast<const yc_u32*>(si) + ty * SH * (LDH / 2) +
                     SW / 2 * (mx + XS * gq);
  float acc[PT][NT][4];
  zero_acc(acc);
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
#pragma unroll
    for (int i = 0; i < PT; ++i) {
      const yc_u32* p = ip + i * TY * SH * (LDH / 2);
      const yc_u32 a[4] = {p[koff[ks][0]], p[koff[ks][0] + SW / 2 * 8 * XS], p[koff[ks][1]],
                           p[koff[ks][1] + SW / 2 * 8 * XS]};
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) @MMA_FN@(acc[i][nt], a, bf[ks][nt]);
    }
  }
@MMA_EPILOGUE@)";

}  // namespace

bool DirectConvTemplate::matches(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  if (!sizes || t.groups != 1 || t.c > kMaxChannels) return false;
  const bool window = t.c * t.kh * t.kw <= kMaxTaps && t.sh <= kMaxStride && t.sw <= kMaxStride &&
                      (t.kh - 1) * t.dh + 1 <= kMaxExtent && (t.kw - 1) * t.dw + 1 <= kMaxExtent;
  const auto storable = [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
  };
  // An NCHW input is addressed densely, whatever its slice says.
  const bool in_ok = task.in_nchw ? task.in == ChannelSlice{t.c, 0} && storable(task.image_dtype)
                                  : storable(task.dtype);
  // Pixel indices are 32-bit in the kernel; channel blocks (of 8 or more) are the grid's y.
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) && t.oh * t.sh < (int64_t{1} << 30) &&
                    t.ow * t.sw < (int64_t{1} << 30) && cpu::ceil_div(t.k, 8) <= 65535;
  return window && in_ok && storable(task.out_dtype) && task.slices_valid() && fits;
}

ScheduleSpace DirectConvTemplate::space(const CudaConvTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"tw", "output columns per block tile", {8, 16, 32, 64}});
  s.knobs.push_back({"th", "output rows per block tile", {1, 2, 4, 8, 16, 32}});
  s.knobs.push_back({"pt", "output rows (m-tile rows) per thread (warp)", {1, 2, 4, 8}});
  s.knobs.push_back({"kb", "output channels per block", {8, 16, 32, 64}});
  s.knobs.push_back({"tn", "output channels per thread (warp)", {4, 8, 16, 32}});
  s.knobs.push_back({"mma", "tensor-core m16n8k16 tiles instead of FMAs", {0, 1}});
  s.knobs.push_back({"pairs",
                     "MMA on a 16-bit NCHW image stored as it is, its depth in pairs of adjacent "
                     "columns (one 32-bit word each) copied in 16-byte pieces",
                     {0, 1},
                     0});
  return s;
}

bool DirectConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const Geometry geo(t, cfg);
  // Pairs: the image's own 16-bit values are the MMA's operands, rows of 16-byte pieces (W a
  // multiple of 8), even strides along rows (a pair's first place stays even), adjacent taps.
  const ConvTask& c = t.conv;
  if (cfg.get("pairs") == 1 && !(geo.mma && t.in_nchw && t.image_dtype == t.dtype && c.w % 8 == 0 &&
                                 c.sw % 2 == 0 && c.dw == 1))
    return false;
  const bool path = geo.mma ? (t.dtype == DType::kFloat16 || t.dtype == DType::kBFloat16) &&
                                  geo.tw % 16 == 0 && geo.tn % 8 == 0 &&
                                  geo.mma_registers() <= kMaxMmaRegisters
                            : geo.pt * geo.tn <= kMaxAccumulators;
  return path && geo.th % geo.pt == 0 && geo.kb % geo.tn == 0 &&
         geo.kb <= std::max<int64_t>(8, pow2_ceil(t.conv.k)) && geo.threads >= kMinThreads &&
         geo.threads <= kMaxThreads && geo.shared <= kMaxSharedBytes;
}

ScheduleConfig DirectConvTemplate::default_config(const CudaConvTask& task) {
  YOLOC_CHECK(matches(task), "direct conv template does not match {}", task.key());
  const ConvTask& t = task.conv;
  // Tensor cores for 16-bit operands (they round the image as the tensor-core template did).
  const int64_t mma = task.dtype == DType::kFloat16 || task.dtype == DType::kBFloat16 ? 1 : 0;
  int64_t kb = std::clamp<int64_t>(pow2_ceil(t.k), 8, 64);
  int64_t tn = std::min<int64_t>(kb, 16);
  int64_t tw = 32;
  while (tw > (mma ? 16 : 8) && tw / 2 >= t.ow) tw /= 2;
  // FMA: 128 threads of 4 pixel rows; MMA: 8 warps of 4 m-tile rows; where the tile rows allow.
  int64_t pt = 4;
  const int64_t ty =
      std::clamp<int64_t>(mma ? 8 / ((kb / tn) * (tw / 16)) : 128 / ((kb / tn) * tw), 1, 32 / pt);
  int64_t th = ty * pt;
  const auto geo = [&] { return Geometry(task, tw, th, pt, kb, tn, mma); };
  // Smaller tiles for small layers, so that more multiprocessors get work, and where the shared
  // memory would not hold the tile: fewer rows per thread first (the same threads), then fewer
  // thread rows.
  while (th > 1 &&
         (geo().blocks(t) < kTargetBlocks || th / 2 >= t.oh || geo().shared > kMaxSharedBytes)) {
    if (pt > 1) {
      pt /= 2;
      th /= 2;
    } else if (Geometry(task, tw, th / 2, pt, kb, tn, mma).threads >= kMinThreads) {
      th /= 2;
    } else {
      break;
    }
  }
  // Wide windows of many channels: fewer channels per block (more channel groups keep the
  // threads).
  while ((geo().shared > kMaxSharedBytes || (mma && geo().mma_registers() > kMaxMmaRegisters)) &&
         kb > 8) {
    kb /= 2;
    tn = std::min<int64_t>(tn, kb);
  }
  ScheduleConfig cfg(
      {{"tw", tw}, {"th", th}, {"pt", pt}, {"kb", kb}, {"tn", tn}, {"mma", mma}, {"pairs", 0}});
  YOLOC_CHECK(valid(task, cfg), "default direct conv config {} invalid for {}", cfg.str(),
              task.key());
  return cfg;
}

CudaKernel DirectConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                    const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "direct conv config {} invalid for {}", cfg.str(), t.key());
  Geometry geo(t, cfg);
  if (geo.mma && !geo.pairs) geo.spread_mma_reads(t.conv);
  const bool bf16 = t.dtype == DType::kBFloat16;
  CudaKernel k = conv_kernel(t, symbol, "direct ", cfg.str(), kDirectKernel,
                             {{"@COMPUTE@", geo.pairs ? kPairsCompute
                                            : geo.mma ? kMmaCompute
                                                      : kFmaCompute},
                              {"@TILE@", geo.pairs ? kPairsTile : kScalarTile},
                              {"@MMA_EPILOGUE@", kMmaEpilogue},
                              {"@OFF@", std::to_string(geo.off)},
                              {"@KX0@", std::to_string(geo.kx0)},
                              {"@PPR@", std::to_string(geo.ppr)},
                              {"@LDH0@", std::to_string(geo.ldh0)},
                              {"@LDH@", std::to_string(geo.ldh)},
                              {"@CSH@", std::to_string(geo.csh)},
                              {"@MMA@", std::to_string(geo.mma)},
                              {"@MMA_FN@", bf16 ? "yc_mma_bf16" : "yc_mma_f16"},
                              {"@CVT@", bf16 ? "yc_float_to_bf16" : "yc_float_to_half"},
                              {"@XT@", cuda_storage_type(t.in_nchw ? t.image_dtype : t.dtype)},
                              {"@TW@", std::to_string(geo.tw)},
                              {"@TH@", std::to_string(geo.th)},
                              {"@PT@", std::to_string(geo.pt)},
                              {"@KB@", std::to_string(geo.kb)},
                              {"@TN@", std::to_string(geo.tn)},
                              {"@NCHW_IN@", t.in_nchw ? "1" : "0"},
                              {"@LD@", std::to_string(geo.ld)},
                              {"@CS@", std::to_string(geo.cs)},
                              {"@LW@", std::to_string(geo.lw)}});
  const ConvTask& c = t.conv;
  k.grid = {static_cast<unsigned>(c.n * cpu::ceil_div(c.oh, geo.th) * cpu::ceil_div(c.ow, geo.tw)),
            static_cast<unsigned>(cpu::ceil_div(c.k, geo.kb)), 1};
  k.block = {static_cast<unsigned>(geo.threads), 1, 1};
  k.shared_bytes = static_cast<unsigned>(geo.shared);
  return k;
}

Tensor DirectConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  return tap_major_weights(task.conv, oihw, kWeightRow);
}

}  // namespace yoloc::codegen::cuda
