enum : int {
  K2 = s2::K,
  N1P = (K + 15) / 16 * 16,       // the intermediate's channels, zero-padded to mma depth steps
  LDT = BN + 8,                   // halves per intermediate row (16 bytes of padding, as LDS)
  LDW = N1P + 8,                  // halves per row of the second weights
  K2P = (K2 + BN - 1) / BN * BN,  // the second stage's channels in column tiles of BN
  RING = B_AT + STAGES * B_STAGE,  // the pipeline's halves (HALO's tile included)
  W2_AT = RING > BM * LDT ? RING : BM * LDT,  // halves before the second weights
  W2_CPR = N1P / 8,                           // 16-byte chunks per row of the second weights
  W2_CHUNKS = K2P * W2_CPR,
  // The second stage's output tile staged over the intermediate (see b2b_store_staged): pixel
  // rows of LDT halves (NHWC), or channel rows of LDP halves (NCHW).
  B2B_EPI = @B2B_EPI@, LDP = BM + 8,
  // (CudaConvTask::boxes) The staged tile is a level's DFL logits, decoded into the detector's
  // boxes (dfl::box_unit, kB2bBoxes) from anchor BOX_BASE on.
  BOX_BASE = @BOX_BASE@,
  VEC_NHWC = s2::OS % 8 == 0 && s2::OO % 8 == 0,
  VEC_NCHW = (s2::OH * s2::OW) % 8 == 0 && s2::OPLANE % 8 == 0 && s2::OBASE % 8 == 0
};
static_assert(!B2B_EPI || (K2P == BN && sizeof(s2::OutT) == 2 &&
                           (!s2::OUT_NCHW || BN * LDP <= W2_AT)),
              "b2b staged output: one column tile of 16-bit values over the intermediate");
static_assert(int(N1P) <= int(BN), "b2b: a block's tile holds every channel of the first stage");

// The second weights ([K2][N1P] packed) into rows of LDW halves, rows past K2 zero: issued with
// the pipeline's first stage, so they have landed when the main loop ends.
YC_DEVICE void b2b_load_w2(yc_u16* sw, const yc_u16* __restrict__ w2, int tid) {
  for (int chunk = tid; chunk < W2_CHUNKS; chunk += THREADS) {
    const int row = chunk / W2_CPR, col = chunk % W2_CPR * 8;
    const bool ok = row < K2;
    yc_cp_async16(sw + row * LDW + col, ok ? w2 + static_cast<yc_i64>(row) * N1P + col : w2,
                  ok ? 16 : 0);
  }
}

// (B2B_EPI) The second stage's tile: bias and activation, rounded to its storage type, into
// shared memory over the intermediate st (every warp has read it by then), then stored in 16-byte
// pieces: 8 channels of a pixel (NHWC), or 8 pixels of a channel plane (NCHW), consecutive threads
// on consecutive pieces. The fragments' own stores are 4 bytes (NHWC) or 2 (NCHW) 8 pixels apart,
// a transaction each.
YC_DEVICE void b2b_store_staged(const float (&acc2)[MI][NI][4], const float* __restrict__ bias2,
                                yc_u16* st, s2::OutT* __restrict__ y,
                                const float* __restrict__ table, int tile, int lane, int wrow0,
                                int warp_n) {
  const int tid = static_cast<int>(threadIdx.x);
  s2::OutT* so = reinterpret_cast<s2::OutT*>(st);
  YC_SYNC();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int col = warp_n * WN + ni * 8 + (lane & 3) * 2;
      float b0, b1;
      yc_bias2(bias2, col, K2, b0, b1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wrow0 + mi * MSTEP + (lane >> 2) + 8 * h;
        const float v0 = col < K2 ? s2::act(acc2[mi][ni][2 * h] + b0) : 0.f;
        const float v1 = col + 1 < K2 ? s2::act(acc2[mi][ni][2 * h + 1] + b1) : 0.f;
        if constexpr (s2::OUT_NCHW) {
          yc_store(so + col * LDP + row, v0);
          yc_store(so + (col + 1) * LDP + row, v1);
        } else {
          yc_store2(so + row * LDT + col, v0, v1);
        }
      }
    }
  }
  YC_SYNC();
@B2B_BOXES@  typedef yc_vec<s2::OutT, 8> V8;
  if constexpr (s2::OUT_NCHW) {
    enum : int { GROUPS = BM / 8 };  // pixel groups of a channel
    for (int chunk = tid; chunk < K2 * GROUPS; chunk += THREADS) {
      const int n = chunk / GROUPS, r0 = chunk % GROUPS * 8;
      const s2::OutT* from = so + n * LDP + r0;
      const int m0 = out_pixel(tile, r0);
      if (VEC_NCHW && m0 % 8 == 0 && m0 < M && out_pixel(tile, r0 + 7) == m0 + 7) {
        *reinterpret_cast<V8*>(y + s2::out_at(m0, n, s2::OS, s2::OO)) =
            *reinterpret_cast<const V8*>(from);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int m = out_pixel(tile, r0 + e);
          if (m < M) y[s2::out_at(m, n, s2::OS, s2::OO)] = from[e];
        }
      }
    }
  } else {
    enum : int { PIECES = (K2 + 7) / 8 };  // 8-channel pieces of a pixel
    for (int chunk = tid; chunk < BM * PIECES; chunk += THREADS) {
      const int row = chunk / PIECES, n = chunk % PIECES * 8;
      const int m = out_pixel(tile, row);
      if (m >= M) continue;
      const s2::OutT* from = so + row * LDT + n;
      s2::OutT* to = y + (static_cast<yc_i64>(m) * s2::OS + s2::OO + n);
      if (VEC_NHWC && n + 8 <= K2) {
        *reinterpret_cast<V8*>(to) = *reinterpret_cast<const V8*>(from);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          if (n + e < K2) to[e] = from[e];
        }
      }
    }
  }
}

// The first stage's bias and activation into the intermediate tile st (over the ring), rounded
// to its storage type as the unfused pair stores it and zero past its K channels; then the second
// GEMM (BM x K2P, depth N1P) from st and the second weights sw, a column tile of BN at a time in
// the first stage's warp layout (rows wrow0 + mi * MSTEP: a wgmma first stage's accumulators
// are mma.sync's fragments of those rows, so its second stage is mma.sync's too), and the second
// stage's epilogue.
YC_DEVICE void b2b_tail(const float (&acc)[MI][NI][4], const float* __restrict__ bias,
                        const yc_u16* sw, yc_u16* st, const float* __restrict__ bias2,
                        s2::OutT* __restrict__ y, const float* __restrict__ table, int tile,
                        int lane, int wrow0, int warp_n) {
  YC_SYNC();  // every warp is past its last read of the ring (ldmatrix, or waited-for wgmma)
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int row = wrow0 + mi * MSTEP + (lane >> 2);
      const int col = warp_n * WN + ni * 8 + (lane & 3) * 2;
      float b0, b1;
      yc_bias2(bias, col, K, b0, b1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = col < K ? @ACT1@(acc[mi][ni][2 * h] + b0) : 0.f;
        const float v1 = col + 1 < K ? @ACT1@(acc[mi][ni][2 * h + 1] + b1) : 0.f;
        *reinterpret_cast<yc_u32*>(st + (row + 8 * h) * LDT + col) =
            static_cast<yc_u32>(@CVT@(v0)) | (static_cast<yc_u32>(@CVT@(v1)) << 16);
      }
    }
  }
  YC_SYNC();
  for (int nc = 0; nc < K2P; nc += BN) {
    float acc2[MI][NI][4];
    zero_acc(acc2);
#pragma unroll
    for (int ks = 0; ks < N1P / 16; ++ks) {
      warp_step(acc2, st + wrow0 * LDT, LDT, sw + (nc + warp_n * WN) * LDW, LDW, ks * 16, lane);
    }
    if constexpr (B2B_EPI) {
      b2b_store_staged(acc2, bias2, st, y, table, tile, lane, wrow0, warp_n);
      continue;
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int row = wrow0 + mi * MSTEP + (lane >> 2);
      const int m = out_pixel(tile, row), m8 = out_pixel(tile, row + 8);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int n = nc + warp_n * WN + ni * 8 + (lane & 3) * 2;
        s2::epilogue2(y, nullptr, nullptr, bias2, m, n, acc2[mi][ni][0], acc2[mi][ni][1]);
        s2::epilogue2(y, nullptr, nullptr, bias2, m8, n, acc2[mi][ni][2], acc2[mi][ni][3]);
      }
    }
  }
}
