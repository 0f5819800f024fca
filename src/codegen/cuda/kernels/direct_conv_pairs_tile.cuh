  {
    enum : int { CPR = LDH0 / 8, PIECES = C * IHT * CPR, BATCH = 8 };
    yc_u16* st = reinterpret_cast<yc_u16*>(si);
    const yc_u16* xs = reinterpret_cast<const yc_u16*>(x);
    const int col0 = iw0 - OFF;
#pragma unroll
    for (int j0 = 0; j0 < PIECES; j0 += BATCH * THREADS) {
      yc_vec<yc_u32, 4> v[BATCH];
#pragma unroll
      for (int j = 0; j < BATCH; ++j) {
        const int i = j0 + j * THREADS + tid;
        const int c = i / (IHT * CPR), r = i / CPR % IHT, gx = col0 + i % CPR * 8;
        const int gy = ih0 + r;
        v[j] = {{0u, 0u, 0u, 0u}};
        if (i < PIECES && static_cast<unsigned>(gy) < static_cast<unsigned>(H) &&
            static_cast<unsigned>(gx) < static_cast<unsigned>(W)) {
          v[j] = *reinterpret_cast<const yc_vec<yc_u32, 4>*>(
              xs + ((static_cast<yc_i64>(img) * C + c) * H + gy) * W + gx);
        }
      }
#pragma unroll
      for (int j = 0; j < BATCH; ++j) {
        const int i = j0 + j * THREADS + tid;
        if (i < PIECES) {
          *reinterpret_cast<yc_vec<yc_u32, 4>*>(st + i / (IHT * CPR) * CSH +
                                                i / CPR % IHT * LDH + i % CPR * 8) = v[j];
        }
      }
    }
  }
