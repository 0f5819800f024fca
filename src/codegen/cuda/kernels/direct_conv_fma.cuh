  const int g = tid % GN, tx = tid / GN % TW, ty = tid / GN / TW;
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
