// The epilogue of tile `tile`'s BM x BN accumulators (columns from n0): bias, activation,
// residual, output (and upsampled copy) stores.
YC_DEVICE void store_tile(const float (&acc)[MI][NI][4], OutT* y, OutT* up, const OutT* res,
                          const float* __restrict__ bias, int tile, int n0, int tid, int lane,
                          int wrow0, int warp_n, yc_u16* smem) {
  // Accumulator e of tile (mi, ni) is row lane / 4 (+8 for e >= 2), column 2 * (lane % 4) + e % 2.
  if constexpr (EPI) {
    // Those pairs make 4-byte stores, 8 pixels apart: few bytes per transaction when the output
    // has few channels. Instead the tile goes through shared memory (over the pipeline ring, once
    // every warp is past its last ldmatrix; a persistent block's own area), and each thread finishes 8 channels of one pixel: a
    // warp then reads the residual and writes the output in 16-byte pieces along the rows.
    enum : int { LDO = BN + 8 };
    YC_SYNC();
    float* so = reinterpret_cast<float*>(smem + EPI_AT);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        float* at = so + (wrow0 + mi * MSTEP + (lane >> 2)) * LDO + warp_n * WN + ni * 8 +
                    (lane & 3) * 2;
        *reinterpret_cast<yc_vec<float, 2>*>(at) = {{acc[mi][ni][0], acc[mi][ni][1]}};
        *reinterpret_cast<yc_vec<float, 2>*>(at + 8 * LDO) = {{acc[mi][ni][2], acc[mi][ni][3]}};
      }
    }
    YC_SYNC();
#pragma unroll
    for (int j = 0; j < (BM * BN / 8 + THREADS - 1) / THREADS; ++j) {
      const int chunk = tid + j * THREADS;
      if ((BM * BN / 8) % THREADS != 0 && chunk >= BM * BN / 8) break;
      const int row = chunk / (BN / 8), col = chunk % (BN / 8) * 8;
      const auto* from = reinterpret_cast<const yc_vec<float, 4>*>(so + row * LDO + col);
      const yc_vec<float, 4> lo = from[0], hi = from[1];
      const float v[8] = {lo.e[0], lo.e[1], lo.e[2], lo.e[3], hi.e[0], hi.e[1], hi.e[2], hi.e[3]};
      epilogue_vec<8>(y, up, res, bias, out_pixel(tile, row), n0 + col, v);
    }
  } else {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int row = wrow0 + mi * MSTEP + (lane >> 2);
      const int m = out_pixel(tile, row), m8 = out_pixel(tile, row + 8);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        if (!splitk_owns(mi, ni)) continue;
        const int n = n0 + warp_n * WN + ni * 8 + (lane & 3) * 2;
        epilogue2(y, up, res, bias, m, n, acc[mi][ni][0], acc[mi][ni][1]);
        epilogue2(y, up, res, bias, m8, n, acc[mi][ni][2], acc[mi][ni][3]);
      }
    }
  }
}
