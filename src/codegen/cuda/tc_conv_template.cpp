#include "codegen/cuda/tc_conv_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/detect_tail_template.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxWarps = 8;
constexpr int64_t kMaxAccumulators = 128;  // fp32 registers per thread for the warp tile
constexpr int64_t kMaxAccumulatorsWgmma = 144;  // wg=2: no A or B fragments in registers
constexpr int64_t kPad = 8;                // halves of padding per shared-memory row
constexpr int64_t kTargetBlocks = 128;     // about one wave on an A100 / H100
// Split-K by default (sm_90): while the blocks stay within two per multiprocessor of an H100 /
// H200 (132), which the small tiles of small layers allow, and each split keeps this many steps.
constexpr int64_t kSplitTargetBlocks = 2 * 132;
constexpr int64_t kMinSplitSteps = 8;
constexpr int kClusterSm = 90;  // thread-block clusters
constexpr int kWgmmaSm = 90;    // warpgroup MMA (wgmma.mma_async, sm_90a)

int64_t gemm_depth8(const CudaConvTask& t) {
  return cpu::ceil_div(t.conv.kh * t.conv.kw * t.conv.c, 8) * 8;
}

// The block tiles of output channels: the powers of two from 16 to 256 and, for K not a
// multiple of 64 (the 80 class channels and the 144 = 64 + 80 merged box and class channels of
// the YOLOv8 heads, the 48 and 96 of C2f blocks), the other multiples of 16 up to 256 that divide
// K: 144 channels in tiles of 64 compute 192 (25 % of the tensor-core work wasted), in tiles of
// 48 or 144 none. In increasing order (the tuner's neighbours).
std::vector<int64_t> channel_tiles(int64_t k) {
  std::vector<int64_t> out;
  for (int64_t v = 16; v <= 256; v += 16) {
    const bool pow2 = (v & (v - 1)) == 0;
    if (pow2 || (k % 64 != 0 && k % v == 0)) out.push_back(v);
  }
  return out;
}

// The warp tiles of output channels: 16, 32 and 64, and 48 or 80 where a block tile is a
// multiple of it and not of 32 (144 = 3 x 48 with at most 8 warps; the heads' 80 class channels
// in one warp tile, 10 n8-tiles, so that a block of them need not be 16 channels wide, 5 warps
// across, and at most 64 pixels tall). For wgmma with A from shared memory (wg=2) also 128 and
// 256 and the block tiles between 80 and 256 that are not multiples of 32 (144): one instruction
// as wide as the block tile.
std::vector<int64_t> warp_channel_tiles(int64_t k) {
  std::set<int64_t> out = {16, 32, 64, 128, 256};
  for (int64_t v : channel_tiles(k)) {
    for (int64_t w : {48, 80})
      if (v % w == 0 && v % 32 != 0) out.insert(w);
    if (v > 80 && v % 32 != 0) out.insert(v);
  }
  return {out.begin(), out.end()};
}

// The halves of a halo tile of bm pixels in rows of tw (the kernel's HALO_ELEMS); 0 for tw = 0.
// wg=2 stores it in swizzled slabs without padding (rows of each slab a multiple of 8, the whole
// a multiple of 1024 bytes).
int64_t halo_elems(const CudaConvTask& task, int64_t bm, int64_t tw, bool wg2) {
  if (tw == 0) return 0;
  const ConvTask& t = task.conv;
  const int64_t th = bm / tw, hh = (th - 1) * t.sh + (t.kh - 1) * t.dh + 1;
  const int64_t hwd = (tw - 1) * t.sw + (t.kw - 1) * t.dw + 1;
  const int64_t pixels = hh * cpu::ceil_div(hwd, t.sw) * t.sw;
  return wg2 ? cpu::ceil_div(cpu::ceil_div(pixels, 8) * 8 * t.c, 512) * 512 : pixels * (t.c + 8);
}

// The pipeline's ring (of B tiles only after a halo tile of `halo` halves); with split-K at least
// the fp32 tile of partial sums that reuses it. (wg=2 uses unpadded rows, a fifth less for
// 32-deep steps: allocating only those was timed on an H200 no faster, 50 configs at a median
// ratio of 0.996, so its blocks keep the same allocation as the others.)
int64_t shared_bytes(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t splitk,
                     int64_t halo = 0) {
  const int64_t ring =
      halo > 0 ? halo * 2 + stages * bn * (bk + kPad) * 2 : stages * (bm + bn) * (bk + kPad) * 2;
  return splitk > 1 ? std::max(ring, bm * bn * 4) : ring;
}

// The fp32 output tile the staged epilogue (epi=1) writes over the pipeline ring: rows of BN + 8
// floats, so that the float pairs of a fragment store fall on distinct banks (8 rows of a tile are
// 8 banks apart).
int64_t staged_bytes(int64_t bm, int64_t bn) { return bm * (bn + 8) * 4; }

// Whether epi=1 stages the output for the task: NHWC outputs only (an NCHW output keeps the
// fragment stores, which write runs of 8 pixels of a channel plane already). A b2b pair's first
// stage has no output; epi=1 stages its second stage's instead (b2b_staged).
bool staged_output(const CudaConvTask& t, const ScheduleConfig& cfg) {
  return cfg.get("epi") == 1 && !t.out_nchw && !t.b2b;
}

// Whether epi=1 stages a b2b pair's second-stage output (kB2bFunctions' B2B_EPI), NHWC or NCHW:
// when the second stage is one column tile (its tile then goes over the intermediate, which its
// GEMM has read) and stores 16-bit values.
bool b2b_staged(const CudaConvTask& t, const ScheduleConfig& cfg) {
  return t.b2b && cfg.get("epi") == 1;
}
bool b2b_staging_fits(const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk, int64_t stages,
                      int64_t halo, bool wg2) {
  if (t.b2b->k > bn || dtype_size(t.b2b->out_dtype) != 2) return false;
  // NCHW: channel rows of bm + 8 halves over the intermediate's place, the kernel's W2_AT halves:
  // the ring as the kernel counts it (wg=2 rows unpadded), or the intermediate if larger.
  const int64_t row = wg2 ? bk : bk + kPad;
  const int64_t ring = halo > 0 ? halo + stages * bn * row : stages * (bm + bn) * row;
  return !t.b2b->out_nchw || bn * (bm + kPad) <= std::max(ring, bm * (bn + kPad));
}

// The kernel after the common declarations of conv_common_source (in the same namespace). See the
// header for the scheme; the comments here say why.
constexpr const char* kTensorCoreKernel = R"(@WGMMA_SOURCE@enum : int {
  BM = @BM@, BN = @BN@, BK = @BK@, WM = @WM@, WN = @WN@, STAGES = @STAGES@, SPLITK = @SPLITK@,
  L1 = @L1@,    // A tiles copied through L1 (cp.async.ca): the taps of a kxk window re-read pixels
  EPI = @EPI@,  // the output tile staged in shared memory, stored in 16-byte pieces
  WARPS_N = BN / WN, TEAM_THREADS = (BM / WM) * WARPS_N * 32,
  // Persistent blocks (PERS, see NTILES): one team of warps, or two (TEAM_THREADS each).
  PERS = @PERS@, TEAMS = PERS == 2 ? 2 : 1, THREADS = TEAM_THREADS * TEAMS,
  MI = WM / 16, NI = WN / 8,
  // Warpgroup MMA (sm_90a): a warpgroup of 4 warps computes 4 WM x WN (wgmma m64nWNk16, B from
  // shared memory; WG = 2: A too), its warp r the rows 16 r + 64 mi; without it a warp computes
  // WM x WN with mma.sync, its rows 16 mi. MSTEP: the rows from one m-tile of a warp to its next.
  WG = @WG@, MSTEP = WG ? 64 : 16, BF16 = @BF16@,
  // WG = 2 (AS): a step's wgmmas run while the next step is issued, so the copies run
  // AHEAD = STAGES - 2 steps ahead (the slot a copy overwrites was read by the wgmmas two steps
  // back, which every warpgroup has waited for).
  AS = WG == 2, AHEAD = AS ? STAGES - 2 : STAGES - 1,
  // AS: both tiles in rows of BK halves (2 BK bytes) swizzled in 16-byte chunks over 8 rows
  // (wgmma's 32B, 64B or 128B swizzle: the tensor cores read 8 rows of a chunk column without
  // bank conflicts); SWZ = log2(CPR), 0 without.
  SWZ = !AS ? 0 : BK == 16 ? 1 : BK == 32 ? 2 : 3,
  // 16 bytes of padding per row: the 8 rows an ldmatrix reads then fall on distinct banks.
  LDS = BK + 8,
  KG8 = (KG + 7) / 8 * 8,
  KT = (KG8 + BK - 1) / BK,
  CPR = BK / 8,  // 16-byte chunks per tile row
  A_CHUNKS = BM * CPR, B_CHUNKS = BN * CPR,
  A_ITERS = (A_CHUNKS + THREADS - 1) / THREADS,
  B_ITERS = (B_CHUNKS + THREADS - 1) / THREADS,
  // (AS: unpadded rows, so that every stage starts at a multiple of the swizzle's 8 rows.)
  A_STAGE = BM * (AS ? BK : LDS), B_STAGE = BN * (AS ? BK : LDS),
  // 16-byte copies need 8 channels of one pixel at a 16-byte aligned address.
  NCHW_IN = @NCHW_IN@,  // x: dense NCHW float32, converted while gathering
  VEC = !NCHW_IN && C % 8 == 0 && IS % 8 == 0 && IO % 8 == 0,
  OUTSIDE = -(1 << 28),  // input row of a pixel past M: every tap is out of bounds
  // Halo tiles (HALO = TW > 0): a block's BM pixels are TH x TW of one image, and its input
  // window (HH x HWD pixels, all C channels) is copied to shared memory once; each depth step's A
  // operand is then that tile read at the step's tap, and only the weights stream through the
  // ring. Columns are stored by phase (column % SW), so that consecutive output columns read
  // consecutive stored pixels at every tap; a pixel's CP halves are an odd number of 16-byte
  // chunks (C is a multiple of 16), so that the 8 rows an ldmatrix reads fall on distinct
  // banks.
  HALO = @HALO@,
  TW = HALO ? HALO : 1, TH = BM / TW,
  TILES_X = (OW + TW - 1) / TW, TILES = TILES_X * ((OH + TH - 1) / TH),
  HH = (TH - 1) * SH + (KH - 1) * DH + 1, HWD = (TW - 1) * SW + (KW - 1) * DW + 1,
  HWS = (HWD + SW - 1) / SW, HWP = HWS * SW,
  CP = C + 8,
  // AS with HALO: the tensor cores read A from the tile, so it is stored as wgmma's swizzled rows:
  // in slabs of SLAB channels (64, 32 or 16: the widest dividing C), each slab the window's
  // pixels (in the order above) as rows of SLAB halves, 16-byte chunks swizzled over 8 rows like
  // the ring's tiles (128B, 64B or 32B mode). A slab holds HALO_PIX rows (a multiple of 8), so
  // every slab starts on its swizzle pattern. With rows of TW = 8 pixels, the 8 pixels of an
  // output row at one tap are 8 consecutive rows of a slab, and the next output row is
  // SH * HWP rows further: one descriptor per m-tile (8 output rows) and 16-deep slice.
  SLAB = !(AS && HALO) ? 8 : C % 64 == 0 ? 64 : C % 32 == 0 ? 32 : 16,  // (8: unused)
  SLAB_SWZ = SLAB == 64 ? 3 : SLAB == 32 ? 2 : 1,
  HALO_PIX = (HH * HWP + 7) / 8 * 8,
  // (AS: rounded up to 1024 bytes, where the ring's swizzled tiles start.)
  HALO_ELEMS = !HALO ? 0 : AS ? (HALO_PIX * C + 511) / 512 * 512 : HH * HWP * CP,
  HALO_CHUNKS = HH * HWD * (C / 8),
  // Persistent blocks (PERS, wg=2 on halo tiles): the weight tiles of every depth step stay in
  // shared memory (KT of them after two halo buffers), and a team computes tile after tile
  // (blockIdx.x * TEAMS + team, then every (gridDim.x * TEAMS)-th of the NTILES). One team copies
  // the next tile's halo into the other buffer while this one's wgmmas run; two teams have a
  // buffer each, and copy the next tile's halo once their wgmmas are done. The staged output tile
  // (EPI, one team only) has shared memory of its own, after the weights.
  NTILES = HALO ? N * TILES : (M + BM - 1) / BM,
  B_AT = HALO ? (PERS ? 2 : 1) * HALO_ELEMS : STAGES * A_STAGE,  // halves before the B tiles
  EPI_AT = PERS ? B_AT + KT * B_STAGE : 0  // halves before the staged output tile
};
static_assert(!HALO || (VEC && C % 16 == 0 && BM % TW == 0),
              "halo tiles: 16-byte copies, 16-deep slices within a tap");
static_assert(!AS || ((!HALO || TW == 8) && AHEAD >= 1 && BK <= 64),
              "A from shared memory: im2col rows or halo rows of 8 pixels, 3+ stages, rows of at "
              "most 128 bytes");
static_assert(!PERS || (AS && HALO && SPLITK == 1 && (TEAMS == 1 || !EPI)),
              "persistent blocks: wg=2 on halo tiles, fragment epilogues for two teams");

// Output pixel (GEMM row) of row `row` of tile `tile` (a block's blockIdx.x, or with PERS each
// of the tiles it walks); M for a halo tile's pixels past the image's edge, which the epilogue
// skips.
YC_DEVICE int out_pixel(int tile, int row) {
  if constexpr (!HALO) {
    return tile * BM + row;
  } else {
    const int img = tile / TILES, t = tile % TILES;
    const int oh = t / TILES_X * TH + row / TW, ow = t % TILES_X * TW + row % TW;
    return oh < OH && ow < OW ? (img * OH + oh) * OW + ow : M;
  }
}

YC_DEVICE void mma(float (&d)[4], const yc_u32 (&a)[4], const yc_u32 (&b)[2]) {
  @MMA@(d, a, b);
}

// One 16-deep step k0 of the warp tile, B from `b` (n-major, ldb halves a row, at the warp's first
// channel). A fragments: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15), lane l addressing row l % 16
// of k half l / 16; `a[mi]` is the address of that row of m-tile mi at depth 0, k half included.
YC_DEVICE void warp_step_rows(float (&acc)[MI][NI][4], const yc_u16* const (&a)[MI],
                              const yc_u16* b, int ldb, int k0, int lane) {
  yc_u32 af[MI][4], bf[NI][2];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) yc_ldmatrix_x4(af[mi], a[mi] + k0);
  // B fragments of two n8 tiles per ldmatrix: matrices (n 0-7, k 0-7), (n 0-7, k 8-15),
  // (n 8-15, k 0-7), (n 8-15, k 8-15); B is stored n-major, so no transpose.
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj) {
    yc_u32 r[4];
    yc_ldmatrix_x4(r, b + (nj * 16 + (lane & 7) + ((lane >> 4) << 3)) * ldb + k0 +
                          ((lane >> 3) & 1) * 8);
    bf[2 * nj][0] = r[0];
    bf[2 * nj][1] = r[1];
    bf[2 * nj + 1][0] = r[2];
    bf[2 * nj + 1][1] = r[3];
  }
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) mma(acc[mi][ni], af[mi], bf[ni]);
}
// The same with A from `a` (row-major, lda halves a row, at the warp's first row).
YC_DEVICE void warp_step(float (&acc)[MI][NI][4], const yc_u16* a, int lda, const yc_u16* b,
                         int ldb, int k0, int lane) {
  const yc_u16* rows[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) rows[mi] = a + (mi * MSTEP + (lane & 15)) * lda + (lane >> 4) * 8;
  warp_step_rows(acc, rows, b, ldb, k0, lane);
}

// The rows and the 16-byte chunk column a thread copies: THREADS is a multiple of CPR (32 | THREADS,
// CPR <= 8), so thread tid copies rows chunk_row(tid) + j * ROW_STEP of column chunk_col(tid) for
// every j, and each depth step's (tap, channel) arithmetic is done once per thread, not per chunk.
// Row-major (row tid / CPR, column tid % CPR), or with WG 8 consecutive threads on 8 consecutive
// rows of a column (a core matrix's 128 contiguous bytes, or a swizzled column's distinct
// banks), so that the 16-byte writes of a quarter warp fall on distinct banks (WG's THREADS are
// a multiple of 128 >= 8 CPR).
YC_DEVICE int chunk_col(int tid) { return WG ? tid / 8 % CPR : tid % CPR; }
YC_DEVICE int chunk_row(int tid) { return WG ? tid / (8 * CPR) * 8 + tid % 8 : tid / CPR; }
// The offset in halves of chunk (row, column) in a tile stored as
enum Layout : int {
  PADDED,   // rows of LDS halves
  CORE,     // core matrices (8 rows x 8 depths, 128 contiguous bytes; the BK / 8 of 8 rows in a
            // row, then the next 8 rows)
  SWIZZLED  // rows of BK halves, chunk u = row * CPR + column stored at u ^ (u / 8 % CPR)
};
// The offset in halves of chunk u of rows of `cpr` 16-byte chunks stored swizzled: at
// u ^ (u / 8 % cpr) (wgmma's 32B, 64B, 128B modes for cpr 2, 4, 8).
YC_DEVICE int swizzled_chunk(int u, int cpr) { return (u ^ ((u >> 3) & (cpr - 1))) * 8; }
template <Layout L>
YC_DEVICE int chunk_at(int row, int kc) {
  if constexpr (L == PADDED) return row * LDS + kc * 8;
  if constexpr (L == CORE) return (row >> 3) * (BK * 8) + kc * 64 + (row & 7) * 8;
  return swizzled_chunk(row * CPR + kc, CPR);
}
constexpr Layout A_LAYOUT = AS ? SWIZZLED : PADDED, B_LAYOUT = AS ? SWIZZLED : WG ? CORE : PADDED;
enum : int {
  ROW_STEP = THREADS / CPR,
  // VEC: the window's taps inside the image as the bits of one word per row.
  TAP_BITS = VEC && KH * KW <= 32,
  // Element offsets of x (its whole buffer, a tap's reach below it included) fit an int.
  X_INT = static_cast<yc_i64>(N) * H * W * IS + IO < (1ll << 30)
};
static_assert(THREADS % CPR == 0 && (!WG || THREADS % (8 * CPR) == 0),
              "a thread copies one chunk column");
typedef typename yc_if<X_INT, int, yc_i64>::type XIdx;
// UPIN (CudaConvTask::up_in; 1x1 stride-1 convs): input channels [UI0, UI0 + UIC) are read from
// `uin`, pixel (img, h / UFH, w / UFW) of a value of UH x UW pixels in a buffer of UIS channels
// whose slice starts at channel UIO, instead of from x (by load_a's im2col rows, or load_halo's
// tiles).
enum : int { UPIN = @UPIN@, UI0 = @UI0@, UIC = @UIC@, UFH = @UFH@, UFW = @UFW@, UH = H / UFH, UW = W / UFW };
enum : yc_i64 { UIS = @UIS@, UIO = @UIO@ };
static_assert(!UPIN || (TAP_BITS && KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH == 0 &&
                        PW == 0 && UI0 % 8 == 0 && UIC % 8 == 0 && UIS % 8 == 0 && UIO % 8 == 0),
              "an upsampled input: 1x1 stride-1 convs, 16-byte copies");
enum : int { U_INT = static_cast<yc_i64>(N) * UH * UW * UIS + UIO < (1ll << 30) };
typedef typename yc_if<U_INT, int, yc_i64>::type UIdx;
// UPIN: the element offset in uin of the slice's channel 0 at the pixel read for input pixel
// (img, h, w).
YC_DEVICE yc_i64 uin_pixel(int img, int h, int w) {
  return ((static_cast<yc_i64>(img) * UH + h / UFH) * UW + w / UFW) * UIS + UIO;
}

// Per A row this thread copies, what every depth step needs: with TAP_BITS the element offset of
// the pixel of tap (0, 0) (outside the image near its borders: only taps inside are read) and the
// taps inside the image as bits; else the image's offset and the window's corner.
struct ARows {
  XIdx pix[A_ITERS];
  UIdx upix[A_ITERS];  // UPIN: the element offset of the pixel's channel 0 in uin
  yc_u32 taps[A_ITERS];
  yc_i64 base[A_ITERS];
  int ih0[A_ITERS], iw0[A_ITERS];
};

YC_DEVICE void a_rows(ARows& rows, int m0, int tid) {
#pragma unroll
  for (int j = 0; j < A_ITERS; ++j) {
    const int row = chunk_row(tid) + j * ROW_STEP, m = m0 + row;
    rows.pix[j] = 0;
    rows.upix[j] = 0;
    rows.taps[j] = 0u;
    rows.base[j] = 0;
    rows.ih0[j] = rows.iw0[j] = OUTSIDE;
    if (row < BM && m < M) {
      const int img = m / (OH * OW), p = m % (OH * OW), oh = p / OW, ow = p % OW;
      const int ih = oh * SH - PH, iw = ow * SW - PW;
      rows.base[j] = NCHW_IN ? static_cast<yc_i64>(img) * C * H * W
                             : static_cast<yc_i64>(img) * H * W * IS + IO;
      rows.ih0[j] = ih;
      rows.iw0[j] = iw;
      if constexpr (UPIN) rows.upix[j] = static_cast<UIdx>(uin_pixel(img, oh, ow));
      if constexpr (TAP_BITS) {
        rows.pix[j] = static_cast<XIdx>(rows.base[j] + (static_cast<yc_i64>(ih) * W + iw) * IS);
#pragma unroll
        for (int r = 0; r < KH; ++r)
#pragma unroll
          for (int s = 0; s < KW; ++s) {
            const bool in = static_cast<unsigned>(ih + r * DH) < static_cast<unsigned>(H) &&
                            static_cast<unsigned>(iw + s * DW) < static_cast<unsigned>(W);
            rows.taps[j] |= static_cast<yc_u32>(in) << (r * KW + s);
          }
      }
    }
  }
}

// Depth step kt of the im2col rows of this thread's pixels into one stage of A.
YC_DEVICE void load_a(yc_u16* sa, const yc_u16* __restrict__ x, const yc_u16* __restrict__ uin,
                      const ARows& rows, int kt, int tid) {
  const int kc = chunk_col(tid), row0 = chunk_row(tid);
  if constexpr (TAP_BITS) {
    // This thread's 8 channels of the step: one tap, one offset from that tap's pixel.
    const int kk = kt * BK + kc * 8;
    const int tap = kk / C, c = kk - tap * C, r = tap / KW, s = tap - r * KW;
    const XIdx at = static_cast<XIdx>((r * DH * W + s * DW) * IS + c);
    const bool in_depth = KG % BK == 0 || kk < KG;
    const bool upsampled = UPIN && c >= UI0 && c < UI0 + UIC;  // (UPIN: 1x1, so c == kk)
#pragma unroll
    for (int j = 0; j < A_ITERS; ++j) {
      const int row = row0 + j * ROW_STEP;
      if (BM % ROW_STEP != 0 && row >= BM) break;
      const bool ok = in_depth && ((rows.taps[j] >> (tap & 31)) & 1u);
      // A pixel inside the image is at offset >= 0: unsigned, the address is one wide multiply-add.
      const XIdx off = ok ? rows.pix[j] + at : 0;
      const yc_u16* src = X_INT ? x + static_cast<unsigned>(off) : x + off;
      if constexpr (UPIN) {
        if (upsampled) src = uin + (ok ? rows.upix[j] + (c - UI0) : 0);
      }
      yc_cp_async16<L1>(sa + chunk_at<A_LAYOUT>(row, kc), src, ok ? 16 : 0);
    }
  } else {
#pragma unroll
    for (int j = 0; j < A_ITERS; ++j) {
      const int row = row0 + j * ROW_STEP;
      if (BM % ROW_STEP != 0 && row >= BM) break;
      const int kk = kt * BK + kc * 8;
      yc_u16* dst = sa + chunk_at<A_LAYOUT>(row, kc);
      if constexpr (VEC) {
        const int c = kk % C, rs = kk / C, s = rs % KW, r = rs / KW;
        const int ih = rows.ih0[j] + r * DH, iw = rows.iw0[j] + s * DW;
        const bool ok = kk < KG && static_cast<unsigned>(ih) < static_cast<unsigned>(H) &&
                        static_cast<unsigned>(iw) < static_cast<unsigned>(W);
        const yc_u16* src =
            ok ? x + rows.base[j] + (static_cast<yc_i64>(ih) * W + iw) * IS + c : x;
        yc_cp_async16<L1>(dst, src, ok ? 16 : 0);
      } else {
        yc_u32 packed[4];
#pragma unroll
        for (int e = 0; e < 8; e += 2) {
          yc_u32 pair = 0;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int k = kk + e + h;
            const int c = k % C, rs = k / C, s = rs % KW, r = rs / KW;
            const int ih = rows.ih0[j] + r * DH, iw = rows.iw0[j] + s * DW;
            const bool ok = k < KG && static_cast<unsigned>(ih) < static_cast<unsigned>(H) &&
                            static_cast<unsigned>(iw) < static_cast<unsigned>(W);
            yc_u32 v = 0u;
            if constexpr (NCHW_IN) {
              const float* xf = reinterpret_cast<const float*>(x);
              if (ok) v = @CVT@(xf[rows.base[j] + (static_cast<yc_i64>(c) * H + ih) * W + iw]);
            } else if (ok) {
              v = x[rows.base[j] + (static_cast<yc_i64>(ih) * W + iw) * IS + c];
            }
            pair |= v << (16 * h);
          }
          packed[e / 2] = pair;
        }
        yc_u32* d32 = reinterpret_cast<yc_u32*>(dst);
#pragma unroll
        for (int e = 0; e < 4; ++e) d32[e] = packed[e];
      }
    }
  }
}

// HALO: the input window of tile `tile`, all C channels, zeros outside the image; copied by NT
// threads, this one thread tid of them.
template <int NT = THREADS>
YC_DEVICE void load_halo(yc_u16* sx, const yc_u16* __restrict__ x, const yc_u16* __restrict__ uin,
                         int tile, int tid) {
  const int img = tile / TILES, t = tile % TILES;
  const int ih0 = t / TILES_X * TH * SH - PH, iw0 = t % TILES_X * TW * SW - PW;
  for (int chunk = tid; chunk < HALO_CHUNKS; chunk += NT) {
    const int cc = chunk % (C / 8), px = chunk / (C / 8), hx = px % HWD, hy = px / HWD;
    const int ih = ih0 + hy, iw = iw0 + hx;
    const bool ok = static_cast<unsigned>(ih) < static_cast<unsigned>(H) &&
                    static_cast<unsigned>(iw) < static_cast<unsigned>(W);
    const bool up = UPIN && cc * 8 >= UI0 && cc * 8 < UI0 + UIC;
    const yc_u16* src = up ? uin : x;
    const yc_i64 at =
        up ? uin_pixel(img, ih, iw) + cc * 8 - UI0
           : (static_cast<yc_i64>(img) * H * W + static_cast<yc_i64>(ih) * W + iw) * IS + IO + cc * 8;
    const int q = hy * HWP + hx % SW * HWS + hx / SW;  // the pixel's place in the tile
    int dst = q * CP + cc * 8;
    if constexpr (AS) {
      // Chunk cc % (SLAB / 8) of row q of slab cc / (SLAB / 8).
      dst = cc / (SLAB / 8) * (HALO_PIX * SLAB) +
            swizzled_chunk(q * (SLAB / 8) + cc % (SLAB / 8), SLAB / 8);
    }
    yc_cp_async16(sx + dst, src + (ok ? at : 0), ok ? 16 : 0);
  }
}

// AS with HALO: the descriptor of A for the 16-deep slice at depth kk (tap (r, s), channels
// [c, c + 16) of one slab) of the m-tile whose first row is tile row `row0` (8 output rows of 8
// pixels from output row row0 / 8): its first pixel's row in the slab, 8-row groups (output
// rows) SH * HWP rows apart. Only the stored layout is swizzled; the descriptor may start on any
// row of it, as the pattern is anchored at the slab's start.
YC_DEVICE unsigned long long halo_desc(const yc_u16* sx, int kk, int row0) {
  const int tap = kk / C, c = kk - tap * C, r = tap / KW, s = tap - r * KW;
  const int q = (row0 / TW * SH + r * DH) * HWP + s * DW % SW * HWS + s * DW / SW;
  return yc_wgmma_desc_swizzled(sx + c / SLAB * (HALO_PIX * SLAB) + q * SLAB + c % SLAB,
                                SH * HWP * SLAB * 2, SLAB_SWZ);
}

// HALO: the offset in the halo tile of depth index kk (tap (r, s), channel c) from that of tap
// (0, 0), channel 0.
YC_DEVICE int halo_tap(int kk) {
  const int tap = kk / C, c = kk - tap * C, r = tap / KW, s = tap - r * KW;
  return (r * DH * HWP + s * DW % SW * HWS + s * DW / SW) * CP + c;
}

// Depth step kt of output channels [n0, n0 + BN) of the packed weights into one stage of B (in
// B_LAYOUT).
YC_DEVICE void load_b(yc_u16* sb, const yc_u16* __restrict__ w, int n0, int kt, int tid) {
  const int kc = chunk_col(tid), kk = kt * BK + kc * 8;
#pragma unroll
  for (int j = 0; j < B_ITERS; ++j) {
    const int row = chunk_row(tid) + j * ROW_STEP;
    if (BN % ROW_STEP != 0 && row >= BN) break;
    const int n = n0 + row;
    const bool ok = (K % BN == 0 || n < K) && (KG8 % BK == 0 || kk < KG8);
    yc_cp_async16(sb + chunk_at<B_LAYOUT>(row, kc),
                  w + static_cast<unsigned>(ok ? n * KG8 + kk : 0), ok ? 16 : 0);
  }
}

YC_DEVICE void zero_acc(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;
}

// The accumulators stay where the asynchronous wgmmas write them: no access is moved across the
// fence before them or the wait after them.
YC_DEVICE void acc_fence(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) yc_reg_fence(acc[mi][ni][e]);
}

// AS: depth step kt's wgmmas (not committed), both operands by descriptors: the warpgroup's
// 64-row m-tiles of A (HALO: the halo tile `a` at the slices' taps; else the step's stage `a` of
// im2col rows, at the warpgroup's first row) and its WN channels of B (`cw`: the step's weight
// tile at the warp's first channel), 16 deep a wgmma. Rows of 2 BK bytes, 8 rows 16 BK bytes
// apart (SBO); a 16-deep slice starts 32 bytes into them. (A template, N = WN, so that only a
// kernel that calls it names yc_wgmma_ss<N>: another kernel of the same module may specialize
// that after this one, which an instantiation here would precede.)
template <int N>
YC_DEVICE void wgmma_step(float (&acc)[MI][NI][4], const yc_u16* a, const yc_u16* cw, int kt,
                          int warp_m) {
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) {
    // (HALO: the last step's slices past the depth have no tap; their weights are zeros.)
    if (HALO && KG % BK != 0 && kt * BK + ks * 16 >= KG) break;
    const unsigned long long desc_b = yc_wgmma_desc_swizzled(cw + ks * 16, BK * 16, SWZ);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const unsigned long long desc_a =
          HALO ? halo_desc(a, kt * BK + ks * 16, warp_m * 4 * WM + mi * 64)
               : yc_wgmma_desc_swizzled(a + mi * 64 * BK + ks * 16, BK * 16, SWZ);
      yc_wgmma_ss<N, BF16>(reinterpret_cast<float(&)[N / 2]>(acc[mi]), desc_a, desc_b);
    }
  }
}

// Split-K: the SPLITK blocks of a cluster (grid z, cluster dims (1, 1, SPLITK), so rank = z)
// each run a share of the depth steps, then sum their partial accumulators through distributed
// shared memory: no extra launch, no global workspace. Block z completes fragments (mi, ni) with
// (mi * NI + ni) % SPLITK == z, so the blocks share the reads and the epilogue.
YC_DEVICE bool splitk_owns(int mi, int ni) {
  return SPLITK == 1 || (mi * NI + ni) % SPLITK == static_cast<int>(blockIdx.z);
}
YC_DEVICE void splitk_reduce(float (&acc)[MI][NI][4], float* red, int tid) {
  // Every warp is done with the pipeline's tiles, which the partials overwrite: value e of
  // fragment f of all threads in turn, so that a warp's accesses are consecutive words.
  YC_SYNC();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[((mi * NI + ni) * 4 + e) * THREADS + tid] = acc[mi][ni][e];
  yc_cluster_sync();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      if (!splitk_owns(mi, ni)) continue;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < SPLITK; ++r) {
          s += yc_ld_cluster_f32(red + ((mi * NI + ni) * 4 + e) * THREADS + tid, r);
        }
        acc[mi][ni][e] = s;
      }
    }
  }
  // A block's shared memory lives while it runs: none exits before its peers have read it.
  yc_cluster_sync();
}
// The epilogue of tile `tile`'s BM x BN accumulators (columns from n0): bias, activation,
// residual, output (and upsampled copy) stores.
YC_DEVICE void store_tile(const float (&acc)[MI][NI][4], OutT* y, OutT* up, const OutT* res,
                          const float* __restrict__ bias, int tile, int n0, int tid, int lane,
                          int wrow0, int warp_n, yc_u16* smem) {
  // Accumulator e of tile (mi, ni) is row lane / 4 (+8 for e >= 2), column 2 * (lane % 4) + e % 2.
  if constexpr (EPI) {
    // Those pairs make 4-byte stores, 8 pixels apart: few bytes per transaction when the output
    // has few channels. Instead the tile goes through shared memory (over the pipeline ring, once
    // every warp is past its last ldmatrix; a persistent block's own area), and each thread finishes 8 channels of one pixel: a
    // warp then reads the residual and writes the output in 16-byte pieces along the rows.
    enum : int { LDO = BN + 8 };
    YC_SYNC();
    float* so = reinterpret_cast<float*>(smem + EPI_AT);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        float* at = so + (wrow0 + mi * MSTEP + (lane >> 2)) * LDO + warp_n * WN + ni * 8 +
                    (lane & 3) * 2;
        *reinterpret_cast<yc_vec<float, 2>*>(at) = {{acc[mi][ni][0], acc[mi][ni][1]}};
        *reinterpret_cast<yc_vec<float, 2>*>(at + 8 * LDO) = {{acc[mi][ni][2], acc[mi][ni][3]}};
      }
    }
    YC_SYNC();
#pragma unroll
    for (int j = 0; j < (BM * BN / 8 + THREADS - 1) / THREADS; ++j) {
      const int chunk = tid + j * THREADS;
      if ((BM * BN / 8) % THREADS != 0 && chunk >= BM * BN / 8) break;
      const int row = chunk / (BN / 8), col = chunk % (BN / 8) * 8;
      const auto* from = reinterpret_cast<const yc_vec<float, 4>*>(so + row * LDO + col);
      const yc_vec<float, 4> lo = from[0], hi = from[1];
      const float v[8] = {lo.e[0], lo.e[1], lo.e[2], lo.e[3], hi.e[0], hi.e[1], hi.e[2], hi.e[3]};
      epilogue_vec<8>(y, up, res, bias, out_pixel(tile, row), n0 + col, v);
    }
  } else {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int row = wrow0 + mi * MSTEP + (lane >> 2);
      const int m = out_pixel(tile, row), m8 = out_pixel(tile, row + 8);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        if (!splitk_owns(mi, ni)) continue;
        const int n = n0 + warp_n * WN + ni * 8 + (lane & 3) * 2;
        epilogue2(y, up, res, bias, m, n, acc[mi][ni][0], acc[mi][ni][1]);
        epilogue2(y, up, res, bias, m8, n, acc[mi][ni][2], acc[mi][ni][3]);
      }
    }
  }
}
@B2B_FUNCTIONS@}  // namespace @SYM@_ns
@SPLITK_ARCH_CHECK@
YC_KERNEL void @LAUNCH_BOUNDS@ @CLUSTER_DIMS@
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_ @UPIN_PARAMS@ @B2B_PARAMS@) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(yc_u16, yc_smem);
  const yc_u16* __restrict__ x = static_cast<const yc_u16*>(x_);
  const yc_u16* __restrict__ w = static_cast<const yc_u16*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  @UPIN_DECL@
  yc_u16* sa = yc_smem;  // the ring of A tiles, or HALO's tile
  yc_u16* sb = yc_smem + B_AT;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31;
  // The warp's team and its place in the team's tile.
  const int team = tid / TEAM_THREADS, warp = tid % TEAM_THREADS >> 5;
  const int warp_m = WG ? warp / 4 / WARPS_N : warp / WARPS_N;
  const int warp_n = WG ? warp / 4 % WARPS_N : warp % WARPS_N;
  const int wrow0 = WG ? warp_m * 4 * WM + (warp & 3) * 16 : warp_m * WM;  // the warp's first row
  const int m0 = static_cast<int>(blockIdx.x) * BM, n0 = static_cast<int>(blockIdx.y) * BN;
  // This block's depth steps [kt0, kt1): its split's share (all of them without split-K).
  const int split = SPLITK > 1 ? static_cast<int>(blockIdx.z) : 0;
  const int kt0 = KT * split / SPLITK, kt1 = KT * (split + 1) / SPLITK;
  const int tile = static_cast<int>(blockIdx.x);

  if constexpr (PERS) {
    // Every depth step's weight tile once (they stay), with each team's first halo; a team's
    // barrier is bar.sync 1 + team (the block's own with one team).
    const auto team_sync = [team] {
      if constexpr (TEAMS == 1) {
        YC_SYNC();
      } else {
        YC_BAR_SYNC(1 + team, TEAM_THREADS);
      }
    };
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) load_b(sb + kt * B_STAGE, w, n0, kt, tid);
    const int ttid = tid - team * TEAM_THREADS, stride = static_cast<int>(gridDim.x) * TEAMS;
    yc_u16* const buf[2] = {sa + team * HALO_ELEMS, sa + (TEAMS == 1 ? 1 : team) * HALO_ELEMS};
    int t = tile * TEAMS + team;
    if (t < NTILES) load_halo<TEAM_THREADS>(buf[0], x, uin, t, ttid);
    yc_cp_async_commit();
    yc_cp_async_wait<0>();
    YC_SYNC();  // the weights and the first halos are visible to all
    for (int it = 0; t < NTILES; t += stride, ++it) {
      const yc_u16* cur = buf[it & 1];
      if (it > 0) {
        // This tile's halo has landed and is visible to the team; with one team, every warp is
        // also done with the other buffer (the previous tile's), which the next copy overwrites.
        yc_cp_async_wait<0>();
        team_sync();
      }
      if (TEAMS == 1 && t + stride < NTILES) load_halo(buf[(it + 1) & 1], x, uin, t + stride, ttid);
      float acc[MI][NI][4];
      zero_acc(acc);
      // All the tile's wgmmas in one group: no copy waits inside the depth loop.
      acc_fence(acc);
      yc_wgmma_fence();
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) wgmma_step<WN>(acc, cur, sb + kt * B_STAGE + warp_n * WN * BK, kt, warp_m);
      yc_wgmma_commit();
      yc_wgmma_wait<0>();
      acc_fence(acc);
      if constexpr (TEAMS > 1) {
        // Every warp of the team is done with its buffer: the next tile's halo lands there while
        // this one's epilogue runs (and the other team's wgmmas).
        team_sync();
        if (t + stride < NTILES) load_halo<TEAM_THREADS>(buf[0], x, uin, t + stride, ttid);
      }
      yc_cp_async_commit();
      store_tile(acc, y, up, res, bias, t, n0, tid, lane, wrow0, warp_n, yc_smem);
    }
    yc_cp_async_wait<0>();  // (the last, empty group)
    return;
  }

  // The pixels of the A rows this thread copies are the same at every depth step.
  ARows rows;
  if constexpr (!HALO) a_rows(rows, m0, tid);
  // HALO: this lane's A rows in the halo tile at tap (0, 0), channel 0.
  const yc_u16* hrow[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    const int row = wrow0 + mi * MSTEP + (lane & 15);
    hrow[mi] = sa + (row / TW * SH * HWP + row % TW) * CP + (lane >> 4) * 8;
  }

  float acc[MI][NI][4];
  zero_acc(acc);

@B2B_LOAD@
  // Steps kt0 .. kt0+AHEAD-1 in flight before the first use; one commit group per step, empty
  // past the last, so that wait<AHEAD - 1> below always means "step kt has landed" (HALO's tile
  // joins the first group).
  if constexpr (HALO) load_halo(sa, x, uin, tile, tid);
#pragma unroll
  for (int s = 0; s < AHEAD; ++s) {
    const int st = kt0 + s;
    if (st < kt1) {
      if constexpr (!HALO) load_a(sa + (st % STAGES) * A_STAGE, x, uin, rows, st, tid);
      load_b(sb + (st % STAGES) * B_STAGE, w, n0, st, tid);
    }
    yc_cp_async_commit();
  }
  for (int kt = kt0; kt < kt1; ++kt) {
    yc_cp_async_wait<AHEAD - 1>();
    // Step kt is visible to all threads, and all are done with step kt + AHEAD - STAGES (kt - 1,
    // or AS's kt - 2), whose buffer the copy issued next overwrites.
    YC_SYNC();
    const int next = kt + AHEAD;
    if (next < kt1) {
      if constexpr (!HALO) load_a(sa + (next % STAGES) * A_STAGE, x, uin, rows, next, tid);
      load_b(sb + (next % STAGES) * B_STAGE, w, n0, next, tid);
    }
    yc_cp_async_commit();
    const yc_u16* cb = sb + (kt % STAGES) * B_STAGE + warp_n * WN * LDS;
    if constexpr (AS) {
      // This step's wgmmas run while the warps wait for and issue the next step's; they are
      // waited for (wait<1>) one step later, before the barrier after which their slot is
      // overwritten.
      const yc_u16* ca = sa + (kt % STAGES) * A_STAGE + warp_m * 4 * WM * BK;
      acc_fence(acc);
      yc_wgmma_fence();
      wgmma_step<WN>(acc, HALO ? sa : ca, sb + (kt % STAGES) * B_STAGE + warp_n * WN * BK, kt, warp_m);
      yc_wgmma_commit();
      yc_wgmma_wait<1>();
      acc_fence(acc);
    } else if constexpr (WG) {
      // The A fragments of all the step's 16-deep slices first, then their wgmmas (B straight
      // from the step's tile), then the wait. A wgmma reads its A registers asynchronously, and
      // ptxas does not keep them apart from later writes: a fragment may not be rewritten before
      // the wait that covers its wgmma. (A version that loaded each slice's fragments after the
      // previous slice's wgmmas were issued, and waited for a step's wgmmas only after issuing
      // the next step's, failed 11 of 21 GPU conv tests on an H200; the host emulation now
      // reports the first of those rewrites too.)
      yc_u32 af[BK / 16][MI][4];
      const yc_u16* ca = sa + (kt % STAGES) * A_STAGE;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const int kk = kt * BK + ks * 16;
        if (HALO && KG % BK != 0 && kk >= KG) break;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          yc_ldmatrix_x4(af[ks][mi], HALO ? hrow[mi] + halo_tap(kk)
                                          : ca + (wrow0 + mi * MSTEP + (lane & 15)) * LDS +
                                                (lane >> 4) * 8 + ks * 16);
        }
      }
      yc_wgmma_fence();
      const yc_u16* cw = sb + (kt % STAGES) * B_STAGE + warp_n * WN * BK;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        if (HALO && KG % BK != 0 && kt * BK + ks * 16 >= KG) break;
        const unsigned long long desc = yc_wgmma_desc(cw + ks * 16 * 8, 128, BK * 16);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
          yc_wgmma<WN, BF16>(reinterpret_cast<float(&)[WN / 2]>(acc[mi]), af[ks][mi], desc);
      }
      yc_wgmma_commit();
      yc_wgmma_wait<0>();
    } else if constexpr (HALO && C % BK == 0) {
      // The step lies within one tap.
      const int tap = halo_tap(kt * BK);
      const yc_u16* at[MI];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) at[mi] = hrow[mi] + tap;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) warp_step_rows(acc, at, cb, LDS, ks * 16, lane);
    } else if constexpr (HALO) {
      // Each 16-deep slice lies within one tap (16 | C); the last step's slices past the depth
      // are skipped (zero weights, and no rows of the tile for their taps).
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const int kk = kt * BK + ks * 16;
        if (KG % BK != 0 && kk >= KG) break;
        const int tap = halo_tap(kk) - ks * 16;  // warp_step_rows adds ks * 16 back
        const yc_u16* at[MI];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) at[mi] = hrow[mi] + tap;
        warp_step_rows(acc, at, cb, LDS, ks * 16, lane);
      }
    } else {
      const yc_u16* ca = sa + (kt % STAGES) * A_STAGE + wrow0 * LDS;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) warp_step(acc, ca, LDS, cb, LDS, ks * 16, lane);
    }
  }
  yc_cp_async_wait<0>();
  if constexpr (AS) {
    yc_wgmma_wait<0>();
    acc_fence(acc);
  }
  if constexpr (SPLITK > 1) splitk_reduce(acc, reinterpret_cast<float*>(yc_smem), tid);
@B2B_TAIL@
  store_tile(acc, y, up, res, bias, tile, n0, tid, lane, wrow0, warp_n, yc_smem);
}
)";

// Back-to-back (CudaConvTask::b2b): the second stage, a 1x1 conv of this block's complete tile of
// the first stage's output (N1P <= BN: one column of tiles), after the second stage's own conv
// declarations (namespace s2, the epilogue). See the header.
constexpr const char* kB2bFunctions = R"(enum : int {
  K2 = s2::K,
  N1P = (K + 15) / 16 * 16,       // the intermediate's channels, zero-padded to mma depth steps
  LDT = BN + 8,                   // halves per intermediate row (16 bytes of padding, as LDS)
  LDW = N1P + 8,                  // halves per row of the second weights
  K2P = (K2 + BN - 1) / BN * BN,  // the second stage's channels in column tiles of BN
  RING = B_AT + STAGES * B_STAGE,  // the pipeline's halves (HALO's tile included)
  W2_AT = RING > BM * LDT ? RING : BM * LDT,  // halves before the second weights
  W2_CPR = N1P / 8,                           // 16-byte chunks per row of the second weights
  W2_CHUNKS = K2P * W2_CPR,
  // The second stage's output tile staged over the intermediate (see b2b_store_staged): pixel
  // rows of LDT halves (NHWC), or channel rows of LDP halves (NCHW).
  B2B_EPI = @B2B_EPI@, LDP = BM + 8,
  // (CudaConvTask::boxes) The staged tile is a level's DFL logits, decoded into the detector's
  // boxes (dfl::box_unit, kB2bBoxes) from anchor BOX_BASE on.
  BOX_BASE = @BOX_BASE@,
  VEC_NHWC = s2::OS % 8 == 0 && s2::OO % 8 == 0,
  VEC_NCHW = (s2::OH * s2::OW) % 8 == 0 && s2::OPLANE % 8 == 0 && s2::OBASE % 8 == 0
};
static_assert(!B2B_EPI || (K2P == BN && sizeof(s2::OutT) == 2 &&
                           (!s2::OUT_NCHW || BN * LDP <= W2_AT)),
              "b2b staged output: one column tile of 16-bit values over the intermediate");
static_assert(int(N1P) <= int(BN), "b2b: a block's tile holds every channel of the first stage");

// The second weights ([K2][N1P] packed) into rows of LDW halves, rows past K2 zero: issued with
// the pipeline's first stage, so they have landed when the main loop ends.
YC_DEVICE void b2b_load_w2(yc_u16* sw, const yc_u16* __restrict__ w2, int tid) {
  for (int chunk = tid; chunk < W2_CHUNKS; chunk += THREADS) {
    const int row = chunk / W2_CPR, col = chunk % W2_CPR * 8;
    const bool ok = row < K2;
    yc_cp_async16(sw + row * LDW + col, ok ? w2 + static_cast<yc_i64>(row) * N1P + col : w2,
                  ok ? 16 : 0);
  }
}

// (B2B_EPI) The second stage's tile: bias and activation, rounded to its storage type, into
// shared memory over the intermediate st (every warp has read it by then), then stored in 16-byte
// pieces: 8 channels of a pixel (NHWC), or 8 pixels of a channel plane (NCHW), consecutive threads
// on consecutive pieces. The fragments' own stores are 4 bytes (NHWC) or 2 (NCHW) 8 pixels apart,
// a transaction each.
YC_DEVICE void b2b_store_staged(const float (&acc2)[MI][NI][4], const float* __restrict__ bias2,
                                yc_u16* st, s2::OutT* __restrict__ y,
                                const float* __restrict__ table, int tile, int lane, int wrow0,
                                int warp_n) {
  const int tid = static_cast<int>(threadIdx.x);
  s2::OutT* so = reinterpret_cast<s2::OutT*>(st);
  YC_SYNC();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int col = warp_n * WN + ni * 8 + (lane & 3) * 2;
      float b0, b1;
      yc_bias2(bias2, col, K2, b0, b1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wrow0 + mi * MSTEP + (lane >> 2) + 8 * h;
        const float v0 = col < K2 ? s2::act(acc2[mi][ni][2 * h] + b0) : 0.f;
        const float v1 = col + 1 < K2 ? s2::act(acc2[mi][ni][2 * h + 1] + b1) : 0.f;
        if constexpr (s2::OUT_NCHW) {
          yc_store(so + col * LDP + row, v0);
          yc_store(so + (col + 1) * LDP + row, v1);
        } else {
          yc_store2(so + row * LDT + col, v0, v1);
        }
      }
    }
  }
  YC_SYNC();
@B2B_BOXES@  typedef yc_vec<s2::OutT, 8> V8;
  if constexpr (s2::OUT_NCHW) {
    enum : int { GROUPS = BM / 8 };  // pixel groups of a channel
    for (int chunk = tid; chunk < K2 * GROUPS; chunk += THREADS) {
      const int n = chunk / GROUPS, r0 = chunk % GROUPS * 8;
      const s2::OutT* from = so + n * LDP + r0;
      const int m0 = out_pixel(tile, r0);
      if (VEC_NCHW && m0 % 8 == 0 && m0 < M && out_pixel(tile, r0 + 7) == m0 + 7) {
        *reinterpret_cast<V8*>(y + s2::out_at(m0, n, s2::OS, s2::OO)) =
            *reinterpret_cast<const V8*>(from);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int m = out_pixel(tile, r0 + e);
          if (m < M) y[s2::out_at(m, n, s2::OS, s2::OO)] = from[e];
        }
      }
    }
  } else {
    enum : int { PIECES = (K2 + 7) / 8 };  // 8-channel pieces of a pixel
    for (int chunk = tid; chunk < BM * PIECES; chunk += THREADS) {
      const int row = chunk / PIECES, n = chunk % PIECES * 8;
      const int m = out_pixel(tile, row);
      if (m >= M) continue;
      const s2::OutT* from = so + row * LDT + n;
      s2::OutT* to = y + (static_cast<yc_i64>(m) * s2::OS + s2::OO + n);
      if (VEC_NHWC && n + 8 <= K2) {
        *reinterpret_cast<V8*>(to) = *reinterpret_cast<const V8*>(from);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          if (n + e < K2) to[e] = from[e];
        }
      }
    }
  }
}

// The first stage's bias and activation into the intermediate tile st (over the ring), rounded
// to its storage type as the unfused pair stores it and zero past its K channels; then the second
// GEMM (BM x K2P, depth N1P) from st and the second weights sw, a column tile of BN at a time in
// the first stage's warp layout (rows wrow0 + mi * MSTEP: a wgmma first stage's accumulators
// are mma.sync's fragments of those rows, so its second stage is mma.sync's too), and the second
// stage's epilogue.
YC_DEVICE void b2b_tail(const float (&acc)[MI][NI][4], const float* __restrict__ bias,
                        const yc_u16* sw, yc_u16* st, const float* __restrict__ bias2,
                        s2::OutT* __restrict__ y, const float* __restrict__ table, int tile,
                        int lane, int wrow0, int warp_n) {
  YC_SYNC();  // every warp is past its last read of the ring (ldmatrix, or waited-for wgmma)
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int row = wrow0 + mi * MSTEP + (lane >> 2);
      const int col = warp_n * WN + ni * 8 + (lane & 3) * 2;
      float b0, b1;
      yc_bias2(bias, col, K, b0, b1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = col < K ? @ACT1@(acc[mi][ni][2 * h] + b0) : 0.f;
        const float v1 = col + 1 < K ? @ACT1@(acc[mi][ni][2 * h + 1] + b1) : 0.f;
        *reinterpret_cast<yc_u32*>(st + (row + 8 * h) * LDT + col) =
            static_cast<yc_u32>(@CVT@(v0)) | (static_cast<yc_u32>(@CVT@(v1)) << 16);
      }
    }
  }
  YC_SYNC();
  for (int nc = 0; nc < K2P; nc += BN) {
    float acc2[MI][NI][4];
    zero_acc(acc2);
#pragma unroll
    for (int ks = 0; ks < N1P / 16; ++ks) {
      warp_step(acc2, st + wrow0 * LDT, LDT, sw + (nc + warp_n * WN) * LDW, LDW, ks * 16, lane);
    }
    if constexpr (B2B_EPI) {
      b2b_store_staged(acc2, bias2, st, y, table, tile, lane, wrow0, warp_n);
      continue;
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int row = wrow0 + mi * MSTEP + (lane >> 2);
      const int m = out_pixel(tile, row), m8 = out_pixel(tile, row + 8);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int n = nc + warp_n * WN + ni * 8 + (lane & 3) * 2;
        s2::epilogue2(y, nullptr, nullptr, bias2, m, n, acc2[mi][ni][0], acc2[mi][ni][1]);
        s2::epilogue2(y, nullptr, nullptr, bias2, m8, n, acc2[mi][ni][2], acc2[mi][ni][3]);
      }
    }
  }
}
)";

// (CudaConvTask::boxes) b2b_store_staged's end once the tile is staged: the box decode.
constexpr const char* kB2bBoxes =
    R"(  // A thread a pixel: the detect tail's box unit on its staged logits (16-bit, as the unfused
  // pair stores them), y the detector's output.
  for (int row = tid; row < BM; row += THREADS) {
    const int m = out_pixel(tile, row);
    if (m >= M) continue;
    const int img = m / (s2::OH * s2::OW), a = BOX_BASE + (m - img * (s2::OH * s2::OW));
    dfl::box_unit(so + (s2::OUT_NCHW ? row : row * LDT), s2::OUT_NCHW ? yc_i64{LDP} : yc_i64{1},
                  table, a,
                  reinterpret_cast<dfl::TO*>(y) +
                      (static_cast<yc_i64>(img) * dfl::ON + static_cast<yc_i64>(a) * dfl::OA));
  }
  return;
)";

}  // namespace

namespace {

// A task the template takes (matches() less the b2b pair's need of a valid config).
bool takes(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  const bool in16 = task.dtype == DType::kFloat16 || task.dtype == DType::kBFloat16;
  const auto out_ok = [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
  };
  // Pixel and depth indices are 32-bit in the kernel.
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) && gemm_depth8(task) < (1 << 30) &&
                    t.n * t.h * t.w < (int64_t{1} << 31);
  // An NCHW image is gathered as float32 only (the direct template takes the narrow ones).
  const bool image_ok = !task.in_nchw || task.image_dtype == DType::kFloat32;
  if (!(sizes && t.groups == 1 && in16 && image_ok && out_ok(task.out_dtype) &&
        task.slices_valid() && fits))
    return false;
  // Class scores: an NCHW output of the last conv (no activation, residual or upsampled copy)
  // whose map fits its planes.
  const ConvTask& last = task.b2b ? task.second_stage().conv : t;
  const bool last_nchw = task.b2b ? task.b2b->out_nchw : task.out_nchw;
  if (task.scores &&
      !(last_nchw && last.act == Activation::kNone && !last.residual && !task.up &&
        task.scores->base >= 0 && task.scores->base + last.oh * last.ow <= task.scores->plane))
    return false;
  // Boxes: a pair whose second stage (no activation) is the whole dense S x R logits map of a
  // level that lies within the tail's anchors (a tail DetectTailTemplate takes, as
  // detect_tail_task_from_group makes them; valid() runs for every candidate of a tuning run, so
  // that is not checked again here).
  if (task.boxes) {
    const DetectTailTask* d = task.boxes->tail.get();
    if (!task.b2b || task.scores || !d) return false;
    const B2bStage& b = *task.b2b;
    if (b.act != Activation::kNone || b.k != d->sides * d->bins ||
        !(b.out == ChannelSlice{b.k, 0}) || task.boxes->base < 0 ||
        task.boxes->base + t.oh * t.ow > d->anchors || t.n != d->n)
      return false;
  }
  // An upsampled input: a 1x1 stride-1 conv of an NHWC input copied in 16-byte pieces, whose
  // upsampled channels and their source's slice are 16-byte aligned too; no b2b pair.
  if (const auto& u = task.up_in) {
    const bool vec = task.in.stride % 8 == 0 && task.in.offset % 8 == 0 && t.c % 8 == 0;
    if (task.b2b || task.in_nchw || !vec || t.kh != 1 || t.kw != 1 || t.sh != 1 || t.sw != 1 ||
        t.ph != 0 || t.pw != 0 || u->c0 % 8 != 0 || u->c % 8 != 0 || u->from.stride % 8 != 0 ||
        u->from.offset % 8 != 0)
      return false;
  }
  if (!task.b2b) return true;
  // The intermediate is the second GEMM's A operand: the activation dtype, kept in shared memory.
  const B2bStage& b = *task.b2b;
  return task.out_dtype == task.dtype && !task.out_nchw && !t.residual && b.k > 0 &&
         out_ok(b.out_dtype) && b.w.numel() == b.k * t.k && b.bias.numel() == b.k;
}

// A b2b pair's bytes of shared memory: the ring after a halo tile of `halo` halves (or the
// intermediate tile over it), then the second weights, their depth padded to 16 and their
// channels to column tiles of bn (kB2bFunctions).
int64_t b2b_shared_bytes(const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk, int64_t stages,
                         int64_t halo) {
  const int64_t n1p = cpu::ceil_div(t.conv.k, 16) * 16, k2p = cpu::ceil_div(t.b2b->k, bn) * bn;
  return std::max(shared_bytes(bm, bn, bk, stages, 1, halo), bm * (bn + kPad) * 2) +
         k2p * (n1p + kPad) * 2;
}

// The teams of warps of a block: two for persistent blocks of pers=2, else one.
int64_t teams(const ScheduleConfig& cfg) { return cfg.get("pers") == 2 ? 2 : 1; }

// Persistent blocks (pers=1, 2): two halo buffers of `halo` halves (one team's two, or one for
// each of two teams), the weight tiles of every depth step (rows of bk halves, as wg=2 stores
// them), and the staged output tile (epi=1, one team) after them.
int64_t persistent_shared_bytes(const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk,
                                int64_t halo, bool staged) {
  const int64_t steps = cpu::ceil_div(gemm_depth8(t), bk);
  return 2 * halo * 2 + steps * bn * bk * 2 + (staged ? staged_bytes(bm, bn) : 0);
}

int64_t kernel_shared_bytes(const CudaConvTask& t, const ScheduleConfig& cfg) {
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t stages = cfg.get("stages");
  const int64_t halo = halo_elems(t, bm, cfg.get("halo"), cfg.get("wg") == 2);
  if (cfg.get("pers") > 0)
    return persistent_shared_bytes(t, bm, bn, bk, halo, staged_output(t, cfg));
  return t.b2b ? b2b_shared_bytes(t, bm, bn, bk, stages, halo)
               : shared_bytes(bm, bn, bk, stages, cfg.get("splitk"), halo);
}

// valid() less matches().
bool fits(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!cfg.in_space(TensorCoreConvTemplate::space(t))) return false;
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t wm = cfg.get("wm"), wn = cfg.get("wn");
  const int64_t splitk = cfg.get("splitk");
  if (bm % wm != 0 || bn % wn != 0) return false;
  // A b2b block holds all the first stage's channels, in one block (no split), and finishes its
  // tile through the second stage (epi=1: its output staged, where that fits).
  if (t.b2b && (bn < cpu::ceil_div(t.conv.k, 16) * 16 || splitk != 1)) return false;
  // Boxes are decoded from the staged tile only (each pixel's logits in shared memory).
  if (t.boxes && !b2b_staged(t, cfg)) return false;
  if (b2b_staged(t, cfg) &&
      !b2b_staging_fits(t, bm, bn, bk, cfg.get("stages"),
                        halo_elems(t, bm, cfg.get("halo"), cfg.get("wg") == 2), cfg.get("wg") == 2))
    return false;
  // Split-K needs clusters, and a depth step for every split.
  if (splitk > 1 && (t.sm < kClusterSm || cpu::ceil_div(gemm_depth8(t), bk) < splitk)) return false;
  const int64_t warps = (bm / wm) * (bn / wn);
  // l1 changes only the 16-byte copies of the input (the kernel's VEC): elsewhere it would be the
  // same kernel measured twice.
  const bool vec_in =
      !t.in_nchw && t.conv.c % 8 == 0 && t.in.stride % 8 == 0 && t.in.offset % 8 == 0;
  if (cfg.get("l1") == 1 && !vec_in) return false;
  // Halo tiles: 16-byte copies of whole pixels, 16-deep slices within one tap, one block a tile,
  // and their copies are not the im2col rows that l1 is about.
  const int64_t halo = cfg.get("halo");
  if (halo > 0 &&
      (!vec_in || t.conv.c % 16 != 0 || bm % halo != 0 || splitk != 1 || cfg.get("l1") != 0))
    return false;
  // A split tile's fragments are finished by the blocks that own them (splitk_owns), not staged.
  if (splitk > 1 && staged_output(t, cfg)) return false;
  // Warpgroup MMA: sm_90 only (sm_90a code; later GPUs have no wgmma), whole warpgroups of one
  // column of warps, no split-K. A b2b pair's first stage may be wg=2 (its second stage stays
  // mma.sync, on the accumulators' rows), not wg=1 (slower everywhere it was measured).
  const int64_t wg = cfg.get("wg");
  if (wg != 0 && (t.sm != kWgmmaSm || (wg == 1 && t.b2b) || splitk != 1 || bm % (4 * wm) != 0))
    return false;
  // A from shared memory too: im2col rows, or halo tiles 8 pixels wide (an m-tile is then 8
  // output rows of 8 pixels, which one descriptor addresses at every tap), a ring of 3+ stages
  // (one for the copies, one for the wgmmas in flight), and depth steps of at most 64 (rows of up
  // to 128 bytes, the widest swizzle). Warp tiles wider than 80 channels are for it only (one
  // wgmma instruction; no B fragments in registers), and so are 144 accumulators a thread (two
  // m-tiles of the 144-channel heads).
  if (wg == 2 ? (halo != 0 && halo != 8) || cfg.get("stages") < 3 || bk > 64 : wn > 80)
    return false;
  // Persistent blocks: wg=2 on halo tiles, no b2b pair; two teams with fragment epilogues.
  // (They use no ring: "stages" changes nothing, and is left free so that `tune --sweep pers`
  // takes a best config of any depth.)
  const int64_t pers = cfg.get("pers");
  if (pers > 0 && (wg != 2 || halo != 8 || t.b2b || (pers == 2 && staged_output(t, cfg))))
    return false;
  const int64_t threads = warps * 32 * teams(cfg);
  const int64_t max_acc = wg == 2 ? kMaxAccumulatorsWgmma : kMaxAccumulators;
  const int64_t acc = wm * wn / 32, shared = kernel_shared_bytes(t, cfg);
  if (staged_output(t, cfg)) {
    // The staged tile must fit in the ring, and the output and residual slices must keep 16-byte
    // pieces aligned (the K tail's last channels fall back to pairs inside epilogue_vec).
    const auto vec = static_cast<int64_t>(16 / dtype_size(t.out_dtype));
    const auto aligned = [&](const ChannelSlice& s) {
      return s.stride % vec == 0 && s.offset % vec == 0;
    };
    if (staged_bytes(bm, bn) > shared || !aligned(t.out) || (t.conv.residual && !aligned(t.res)))
      return false;
  }
  // ptxas caps a thread's registers at 64 Ki / (minb x threads) (minb 1 without a bound; 255 at
  // most): it must leave the accumulators and 32 more (a wgmma needs all its accumulators in
  // registers at once, and ptxas refuses below that: "Insufficient registers"). Two teams of 8
  // warps leave 128.
  const int64_t minb = cfg.get("minb");
  if (65536 / (std::max<int64_t>(minb, 1) * threads) < acc + 32) return false;
  // A b2b pair keeps 99 KiB: its larger forms (second stages of 256 channels, 128 KiB of second
  // weights) would be new pairs, not yet run on a GPU.
  const int64_t max_shared = t.b2b ? kMaxSharedBytes : max_shared_bytes(t.sm);
  return warps <= kMaxWarps && acc <= max_acc && shared <= max_shared;
}

// The b2b pair's heuristic config: the narrowest tile of channels that holds the first stage's,
// pixels as for a lone conv (a hundred blocks or so), then the first of the warp tiles, depth
// steps and stages (largest first) that fits; nullopt when none does (the pair is not fused).
std::optional<ScheduleConfig> b2b_default(const CudaConvTask& t) {
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow;
  int64_t bn = 0;
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  for (int64_t v : space.knobs[1].domain) {
    if (v >= cpu::ceil_div(t.conv.k, 16) * 16) {
      bn = v;
      break;
    }
  }
  if (bn == 0) return std::nullopt;
  int64_t bm0 = 128;
  while (cpu::ceil_div(m, bm0) < kTargetBlocks && bm0 > 32) bm0 /= 2;
  const int64_t depth = gemm_depth8(t);
  for (int64_t bm = bm0; bm >= 32; bm /= 2)
    for (int64_t stages : {3, 2})
      for (int64_t bk : {depth <= 16 ? 16 : 32, 16})
        for (int64_t wn : {32, 16, 64})
          for (int64_t wm : {64, 32, 16}) {
            const ScheduleConfig cfg({{"bm", bm},
                                      {"bn", bn},
                                      {"bk", bk},
                                      {"wm", std::min(wm, bm)},
                                      {"wn", wn},
                                      {"stages", stages},
                                      {"splitk", 1},
                                      {"l1", 0},
                                      {"epi", t.boxes ? 1 : 0},
                                      {"halo", 0},
                                      {"wg", 0},
                                      {"minb", 0},
                                      {"pers", 0}});
            if (fits(t, cfg)) return cfg;
          }
  return std::nullopt;
}

}  // namespace

bool TensorCoreConvTemplate::matches(const CudaConvTask& task) {
  return takes(task) && (!task.b2b || b2b_default(task).has_value());
}

ScheduleSpace TensorCoreConvTemplate::space(const CudaConvTask& t) {
  ScheduleSpace s;
  s.knobs.push_back({"bm", "output pixels per block tile", {32, 64, 128, 256}});
  s.knobs.push_back({"bn", "output channels per block tile", channel_tiles(t.conv.k)});
  s.knobs.push_back({"bk", "GEMM depth per pipeline step", {16, 32, 64, 128}});
  s.knobs.push_back({"wm", "output pixels per warp tile", {16, 32, 64}});
  s.knobs.push_back({"wn", "output channels per warp tile", warp_channel_tiles(t.conv.k)});
  s.knobs.push_back({"stages", "shared-memory pipeline depth", {2, 3, 4, 5, 6}});
  // Records written before split-K lack it: they meant one block per tile.
  s.knobs.push_back(
      {"splitk", "blocks of a cluster sharing a tile's depth steps (sm_90)", {1, 2, 4, 8}, 1});
  s.knobs.push_back({"l1", "input tiles copied through L1 (cp.async.ca), else L2 only", {0, 1}, 0});
  s.knobs.push_back({"epi",
                     "output tile staged in shared memory for 16-byte stores (NHWC; a b2b pair's "
                     "second stage, NHWC or NCHW)",
                     {0, 1},
                     0});
  s.knobs.push_back({"halo",
                     "0: im2col rows through the ring; else a tile of bm/halo x halo pixels whose "
                     "input window is copied to shared memory once",
                     {0, 8, 16, 32},
                     0});
  s.knobs.push_back({"wg",
                     "warpgroup MMA (wgmma, sm_90a), 1: the weights read from shared memory, "
                     "the pixels from registers; 2: both from shared memory, pipelined; "
                     "0: mma.sync",
                     {0, 1, 2},
                     0});
  s.knobs.push_back({"minb",
                     "blocks per multiprocessor the compiler must leave registers for "
                     "(__launch_bounds__'s second argument); 0: no bound",
                     {0, 2, 3, 4},
                     0});
  s.knobs.push_back({"pers",
                     "persistent blocks (wg=2, halo=8): the weights of the block's channels stay "
                     "in shared memory and each team of warps computes tile after tile, the grid "
                     "capped at launch at the blocks the GPU holds at once; 1: one team, 2: two "
                     "(one's epilogue overlaps the other's wgmmas); 0: a block a tile",
                     {0, 1, 2},
                     0});
  return s;
}

bool TensorCoreConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  return takes(t) && fits(t, cfg);
}

ScheduleConfig TensorCoreConvTemplate::default_config(const CudaConvTask& t) {
  YOLOC_CHECK(matches(t), "tensor-core conv template does not match {}", t.key());
  if (t.b2b) return *b2b_default(t);
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow, k = t.conv.k;
  int64_t bn = k <= 16 ? 16 : k <= 32 ? 32 : k <= 64 ? 64 : 128;
  int64_t bm = 128;
  const auto blocks = [&] { return cpu::ceil_div(m, bm) * cpu::ceil_div(k, bn); };
  // Smaller tiles for small layers, so that more multiprocessors get work: pixels first (the
  // weights tile is reused across them), channels down to 32.
  while (blocks() < kTargetBlocks && (bm > 32 || bn > 32)) {
    if (bm > 32) {
      bm /= 2;
    } else {
      bn /= 2;
    }
  }
  const int64_t wn = std::min<int64_t>(bn, 32);
  // Four warps, or eight for the widest tiles (64 x 32 accumulators per warp at most).
  int64_t wm = std::min<int64_t>(bm, 64);
  while ((bm / wm) * (bn / wn) < 4 && wm > 16) wm /= 2;
  const int64_t depth = gemm_depth8(t);
  const int64_t bk = depth <= 16 ? 16 : 32;
  const int64_t steps = cpu::ceil_div(depth, bk);
  const int64_t stages = steps >= 3 ? 3 : 2;
  // Split-K where the tiles are few and deep (the 20x20 and 40x40 layers of a batch-1 network:
  // tens of blocks, each running tens of dependent steps).
  int64_t splitk = 1;
  if (t.sm >= kClusterSm) {
    while (splitk < 8 && blocks() * splitk * 2 <= kSplitTargetBlocks &&
           steps / (splitk * 2) >= kMinSplitSteps) {
      splitk *= 2;
    }
  }
  // l1 and epi off until measured on GPUs.
  ScheduleConfig cfg({{"bm", bm},
                      {"bn", bn},
                      {"bk", bk},
                      {"wm", wm},
                      {"wn", wn},
                      {"stages", stages},
                      {"splitk", splitk},
                      {"l1", 0},
                      {"epi", 0},
                      {"halo", 0},
                      {"wg", 0},
                      {"minb", 0},
                      {"pers", 0}});
  YOLOC_CHECK(valid(t, cfg), "default tensor-core conv config {} invalid for {}", cfg.str(),
              t.key());
  return cfg;
}

CudaKernel TensorCoreConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                        const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "tensor-core conv config {} invalid for {}", cfg.str(), t.key());
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t wm = cfg.get("wm"), wn = cfg.get("wn"), stages = cfg.get("stages");
  const int64_t splitk = cfg.get("splitk");
  const int64_t wg = cfg.get("wg");
  const bool bf16 = t.dtype == DType::kBFloat16;
  const char* act1 = cuda_act_function(t.conv.act, t.out_dtype);
  // wgmma: the instruction for this warp tile's N (outside the kernel's namespace), and the
  // marker that has nvrtc_compile build the kernel for sm_90a.
  const std::string wgmma =
      wg ? "}  // namespace @SYM@_ns\n#define YC_ARCH_SPECIFIC 1\n"
           "#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
           "#error \"warpgroup MMA (wg) needs sm_90a\"\n#endif\n" +
               wgmma_source(static_cast<int>(wn), bf16) + "namespace @SYM@_ns {\n"
         : "";
  // Back-to-back: the second stage's declarations and functions, its weights loaded with the
  // first pipeline stage, and its tail in place of the epilogue.
  CudaKernel k = conv_kernel(
      t, symbol, "", cfg.str(), kTensorCoreKernel,
      {{"@WGMMA_SOURCE@", wgmma},
       {"@WG@", std::to_string(wg)},
       {"@BF16@", bf16 ? "1" : "0"},
       {"@B2B_FUNCTIONS@",
        t.b2b ? "namespace s2 {\n" + conv_common_source(t.second_stage()) + "}  // namespace s2\n" +
                    (t.boxes ? "namespace dfl {\n" + detect_box_unit_source(*t.boxes->tail) +
                                   "}  // namespace dfl\n"
                             : std::string()) +
                    kB2bFunctions
              : ""},
       // ---- The b2b kernel parameters, after the common ones of conv_task.h (extra parameters
       // of other fused forms go before these: the list is x, w, bias, res, y, up, [uin], w2,
       // bias2; tasks.cpp appends their arguments in the same order).
       {"@B2B_PARAMS@",
        t.b2b ? std::string(",\n          const void* w2_, const float* __restrict__ bias2") +
                    (t.boxes ? ", const float* __restrict__ dfl_table" : "")
              : ""},
       // ---- An upsampled input's source (CudaConvTask::up_in), right after the common ones.
       {"@UPIN_PARAMS@", t.up_in ? ",\n          const void* uin_" : ""},
       {"@UPIN_DECL@", t.up_in
                           ? "const yc_u16* __restrict__ uin = static_cast<const yc_u16*>(uin_);"
                           : "const yc_u16* uin = nullptr;"},
       {"@UPIN@", t.up_in ? "1" : "0"},
       {"@UI0@", std::to_string(t.up_in ? t.up_in->c0 : 0)},
       {"@UIC@", std::to_string(t.up_in ? t.up_in->c : 0)},
       {"@UFH@", std::to_string(t.up_in ? t.up_in->fh : 1)},
       {"@UFW@", std::to_string(t.up_in ? t.up_in->fw : 1)},
       {"@UIS@", std::to_string(t.up_in ? t.up_in->from.stride : 0)},
       {"@UIO@", std::to_string(t.up_in ? t.up_in->from.offset : 0)},
       {"@B2B_LOAD@",
        t.b2b ? "  b2b_load_w2(yc_smem + W2_AT, static_cast<const yc_u16*>(w2_), tid);" : ""},
       {"@B2B_TAIL@", t.b2b ? fmt::format("  b2b_tail(acc, bias, yc_smem + W2_AT, yc_smem, bias2, "
                                          "static_cast<s2::OutT*>(y_), {}, tile, lane, wrow0, "
                                          "warp_n);\n  return;",
                                          t.boxes ? "dfl_table" : "nullptr")
                            : ""},
       {"@ACT1@", act1},
       {"@BM@", std::to_string(bm)},
       {"@BN@", std::to_string(bn)},
       {"@BK@", std::to_string(bk)},
       {"@WM@", std::to_string(wm)},
       {"@WN@", std::to_string(wn)},
       {"@STAGES@", std::to_string(stages)},
       {"@SPLITK@", std::to_string(splitk)},
       {"@SPLITK_ARCH_CHECK@", splitk > 1
                                   ? "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n"
                                     "#error \"split-K (thread-block clusters) needs sm_90\"\n"
                                     "#endif\n"
                                   : ""},
       {"@CLUSTER_DIMS@", splitk > 1 ? fmt::format("YC_CLUSTER_DIMS(1, 1, {})", splitk) : ""},
       {"@LAUNCH_BOUNDS@",
        cfg.get("minb") > 0
            ? fmt::format("YC_LAUNCH_BOUNDS_MIN({}_ns::THREADS, {})", symbol, cfg.get("minb"))
            : fmt::format("YC_LAUNCH_BOUNDS({}_ns::THREADS)", symbol)},
       {"@L1@", std::to_string(cfg.get("l1"))},
       {"@EPI@", staged_output(t, cfg) ? "1" : "0"},
       {"@B2B_EPI@", b2b_staged(t, cfg) ? "1" : "0"},
       {"@B2B_BOXES@", t.boxes ? kB2bBoxes : ""},
       {"@BOX_BASE@", std::to_string(t.boxes ? t.boxes->base : 0)},
       {"@MMA@", t.dtype == DType::kBFloat16 ? "yc_mma_bf16" : "yc_mma_f16"},
       {"@NCHW_IN@", t.in_nchw ? "1" : "0"},
       {"@HALO@", std::to_string(cfg.get("halo"))},
       {"@PERS@", std::to_string(cfg.get("pers"))},
       {"@CVT@", t.dtype == DType::kBFloat16 ? "yc_float_to_bf16" : "yc_float_to_half"}});
  // A block per bm output pixels, or per halo tile (bm / halo rows of halo pixels of one image).
  const int64_t halo = cfg.get("halo");
  const int64_t blocks =
      halo == 0 ? cpu::ceil_div(t.conv.n * t.conv.oh * t.conv.ow, bm)
                : t.conv.n * cpu::ceil_div(t.conv.oh, bm / halo) * cpu::ceil_div(t.conv.ow, halo);
  // (Two teams of a persistent block take two tiles at a time.)
  k.grid = {static_cast<unsigned>(cpu::ceil_div(blocks, teams(cfg))),
            static_cast<unsigned>(cpu::ceil_div(t.conv.k, bn)), static_cast<unsigned>(splitk)};
  k.block = {static_cast<unsigned>((bm / wm) * (bn / wn) * 32 * teams(cfg)), 1, 1};
  k.cluster = {1, 1, static_cast<unsigned>(splitk)};
  k.shared_bytes = static_cast<unsigned>(kernel_shared_bytes(t, cfg));
  k.persistent = cfg.get("pers") > 0;
  return k;
}

Tensor TensorCoreConvTemplate::pack_b2b_weights(const CudaConvTask& task) {
  YOLOC_CHECK(task.b2b.has_value(), "{} is no back-to-back pair", task.key());
  const int64_t k2 = task.b2b->k, n1 = task.conv.k, n1p = cpu::ceil_div(n1, 16) * 16;
  Tensor packed(DType::kFloat32, {k2, n1p});
  float* p = packed.data<float>();
  std::fill(p, p + packed.numel(), 0.f);
  const Tensor w = task.b2b->w.cast(DType::kFloat32);
  for (int64_t n = 0; n < k2; ++n)
    for (int64_t c = 0; c < n1; ++c) p[n * n1p + c] = w.data<float>()[n * n1 + c];
  return packed.cast(task.dtype);
}

Tensor TensorCoreConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  const ConvTask& t = task.conv;
  const int64_t depth = gemm_depth8(task);
  Tensor packed(DType::kFloat32, {t.k, depth});
  float* p = packed.data<float>();
  std::fill(p, p + packed.numel(), 0.f);
  for (int64_t n = 0; n < t.k; ++n)
    for (int64_t r = 0; r < t.kh; ++r)
      for (int64_t s = 0; s < t.kw; ++s)
        for (int64_t c = 0; c < t.c; ++c)
          p[n * depth + (r * t.kw + s) * t.c + c] = oihw[((n * t.c + c) * t.kh + r) * t.kw + s];
  return packed.cast(task.dtype);
}

}  // namespace yoloc::codegen::cuda
