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

