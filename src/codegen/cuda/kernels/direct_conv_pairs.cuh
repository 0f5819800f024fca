  enum : int { NP = C * KH * PPR, KS = (2 * NP + 15) / 16, NT = TN / 8, XS = TW / 16 };
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
@MMA_EPILOGUE@