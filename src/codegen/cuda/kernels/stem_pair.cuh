enum : int {
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
