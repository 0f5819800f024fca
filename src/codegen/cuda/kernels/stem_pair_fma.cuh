  // 2. (FMA) The first conv on the R x Q intermediate pixels, PP pixels (THREADS apart) per
  // thread at a time: each weight read from shared memory feeds PP FMAs. Pixels outside the first conv's
  // output are computed too (their window lies in the staged tile) and then zeroed.
  for (int p0 = tid; p0 < R * Q; p0 += PP * THREADS) {
    float acc[PP][C];
    int at[PP];
#pragma unroll
    for (int u = 0; u < PP; ++u) {
      const int p = p0 + u * THREADS < R * Q ? p0 + u * THREADS : p0;
      at[u] = p / Q * XSH * LDI + p % Q;
#pragma unroll
      for (int k = 0; k < C; ++k) acc[u][k] = 0.f;
    }
#pragma unroll
    for (int c = 0; c < XC; ++c) {
#pragma unroll
      for (int ky = 0; ky < XKH; ++ky) {
#pragma unroll
        for (int kx = 0; kx < XKW; ++kx) {
          const int tap_at = (c * IR + ky) * LDI + kx % XSW * PC + kx / XSW;
          float v[PP];
#pragma unroll
          for (int u = 0; u < PP; ++u) v[u] = si[at[u] + tap_at];
          const float* wt = sw0 + ((c * XKH + ky) * XKW + kx) * C;
#pragma unroll
          for (int k4 = 0; k4 < C / 4; ++k4) {
            const yc_vec<float, 4> w4 = reinterpret_cast<const yc_vec<float, 4>*>(wt)[k4];
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
              for (int u = 0; u < PP; ++u)
                acc[u][4 * k4 + e] = fmaf(v[u], w4.e[e], acc[u][4 * k4 + e]);
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < PP; ++u) {
      const int p = p0 + u * THREADS;
      if (p >= R * Q) break;
      const int r = p / Q, q = p % Q;
      const bool inside = static_cast<unsigned>(ry0 + r) < static_cast<unsigned>(H) &&
                          static_cast<unsigned>(rx0 + q) < static_cast<unsigned>(W);
      InT* out = sm + p * KP;
#pragma unroll
      for (int k = 0; k < C; k += 2) {
        yc_store2(out + k, inside ? act0(acc[u][k] + bias0[k]) : 0.f,
                  inside ? act0(acc[u][k + 1] + bias0[k + 1]) : 0.f);
      }
    }
  }
