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

