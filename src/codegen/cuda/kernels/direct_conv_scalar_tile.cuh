  // The input tile, zeros outside the image: thread (lw, lr) copies tile columns lw + q * LW of
  // tile rows lr + j * LR of every channel. Its columns' validity and places are the same in
  // every row, and its reads are at fixed distances from one address. RB rows at a time, all
  // their loads before their stores and without branches: so many loads are in flight at once.
  {
    const int lw = tid % LW, lr = tid / LW;
    bool col_ok[QC], col_in[QC];
    int col_at[QC];
#pragma unroll
    for (int q = 0; q < QC; ++q) {
      const int ic = lw + q * LW;
      // Past the tile's columns the phase layout would land on other columns' words.
      col_in[q] = IWT % LW == 0 || ic < IWT;
      col_ok[q] = col_in[q] && static_cast<unsigned>(iw0 + ic) < static_cast<unsigned>(W);
      col_at[q] = ic % SW * PC + ic / SW;
    }
    const yc_i64 xo =
        NCHW_IN ? (static_cast<yc_i64>(img) * C * H + ih0 + lr) * W + iw0 + lw
                : ((static_cast<yc_i64>(img) * H + ih0 + lr) * W + iw0 + lw) * IS + IO;
#pragma unroll
    for (int j0 = 0; j0 < QR; j0 += RB) {
      float v[RB][QC][C];
#pragma unroll
      for (int j = 0; j < RB; ++j) {
        const int row = lr + (j0 + j) * LR;
        const bool row_ok = j0 + j < QR && (IHT % LR == 0 || row < IHT) &&
                            static_cast<unsigned>(ih0 + row) < static_cast<unsigned>(H);
#pragma unroll
        for (int q = 0; q < QC; ++q) {
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const yc_i64 at = NCHW_IN ? (static_cast<yc_i64>(c) * H + (j0 + j) * LR) * W + q * LW
                                      : (static_cast<yc_i64>(j0 + j) * LR * W + q * LW) * IS + c;
            v[j][q][c] = 0.f;
            if (row_ok && col_ok[q]) v[j][q][c] = yc_load(x + (xo + at));
          }
        }
      }
#pragma unroll
      for (int j = 0; j < RB; ++j) {
        const int row = lr + (j0 + j) * LR;
        const bool row_in = j0 + j < QR && (IHT % LR == 0 || row < IHT);
#pragma unroll
        for (int q = 0; q < QC; ++q) {
#pragma unroll
          for (int c = 0; c < C; ++c) {
            if (row_in && col_in[q]) si[c * CS + row * LD + col_at[q]] = v[j][q][c];
          }
        }
      }
    }
  }
