  // 2. (MMA) The first conv on the R x Q intermediate pixels as a GEMM of 16-pixel m-tiles (pixel
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
