  // A thread a pixel: the detect tail's box unit on its staged logits (16-bit, as the unfused
  // pair stores them), y the detector's output.
  for (int row = tid; row < BM; row += THREADS) {
    const int m = out_pixel(tile, row);
    if (m >= M) continue;
    const int img = m / (s2::OH * s2::OW), a = BOX_BASE + (m - img * (s2::OH * s2::OW));
    dfl::box_unit(so + (s2::OUT_NCHW ? row : row * LDT), s2::OUT_NCHW ? yc_i64{LDP} : yc_i64{1},
                  table, a,
                  reinterpret_cast<dfl::TO*>(y) +
                      (static_cast<yc_i64>(img) * dfl::ON + static_cast<yc_i64>(a) * dfl::OA));
  }
  return;
