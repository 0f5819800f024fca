enum : int {
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
