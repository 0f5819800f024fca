  // Accumulator e of n-tile nt: pixel row gq (+8 for e >= 2), channels 2 * tq + e % 2.
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
