// Depth step kt of output channels [n0, n0 + BN) of the packed weights into one stage of B (in
// B_LAYOUT).
YC_DEVICE void load_b(yc_u16* sb, const yc_u16* __restrict__ w, int n0, int kt, int tid) {
  const int kc = chunk_col(tid), kk = kt * BK + kc * 8;
#pragma unroll
  for (int j = 0; j < B_ITERS; ++j) {
    const int row = chunk_row(tid) + j * ROW_STEP;
    if (BN % ROW_STEP != 0 && row >= BN) break;
    const int n = n0 + row;
    const bool ok = (K % BN == 0 || n < K) && (KG8 % BK == 0 || kk < KG8);
    yc_cp_async16(sb + chunk_at<B_LAYOUT>(row, kc),
                  w + static_cast<unsigned>(ok ? n * KG8 + kk : 0), ok ? 16 : 0);
  }
}

YC_DEVICE void zero_acc(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;
}

// The accumulators stay where the asynchronous wgmmas write them: no access is moved across the
// fence before them or the wait after them.
YC_DEVICE void acc_fence(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) yc_reg_fence(acc[mi][ni][e]);
}

