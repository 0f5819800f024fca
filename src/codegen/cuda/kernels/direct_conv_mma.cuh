  enum : int { KS = (TAPS + 15) / 16, NT = TN / 8, XS = TW / 16 };
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

@MMA_EPILOGUE@