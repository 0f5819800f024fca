// HALO: the input window of tile `tile`, all C channels, zeros outside the image; copied by NT
// threads, this one thread tid of them.
template <int NT = THREADS>
YC_DEVICE void load_halo(yc_u16* sx, const yc_u16* __restrict__ x, const yc_u16* __restrict__ uin,
                         int tile, int tid) {
  const int img = tile / TILES, t = tile % TILES;
  const int ih0 = t / TILES_X * TH * SH - PH, iw0 = t % TILES_X * TW * SW - PW;
  for (int chunk = tid; chunk < HALO_CHUNKS; chunk += NT) {
    const int cc = chunk % (C / 8), px = chunk / (C / 8), hx = px % HWD, hy = px / HWD;
    const int ih = ih0 + hy, iw = iw0 + hx;
    const bool ok = static_cast<unsigned>(ih) < static_cast<unsigned>(H) &&
                    static_cast<unsigned>(iw) < static_cast<unsigned>(W);
    const bool up = UPIN && cc * 8 >= UI0 && cc * 8 < UI0 + UIC;
    const yc_u16* src = up ? uin : x;
    const yc_i64 at =
        up ? uin_pixel(img, ih, iw) + cc * 8 - UI0
           : (static_cast<yc_i64>(img) * H * W + static_cast<yc_i64>(ih) * W + iw) * IS + IO + cc * 8;
    const int q = hy * HWP + hx % SW * HWS + hx / SW;  // the pixel's place in the tile
    int dst = q * CP + cc * 8;
    if constexpr (AS) {
      // Chunk cc % (SLAB / 8) of row q of slab cc / (SLAB / 8).
      dst = cc / (SLAB / 8) * (HALO_PIX * SLAB) +
            swizzled_chunk(q * (SLAB / 8) + cc % (SLAB / 8), SLAB / 8);
    }
    yc_cp_async16(sx + dst, src + (ok ? at : 0), ok ? 16 : 0);
  }
}

// AS with HALO: the descriptor of A for the 16-deep slice at depth kk (tap (r, s), channels
// [c, c + 16) of one slab) of the m-tile whose first row is tile row `row0` (8 output rows of 8
// pixels from output row row0 / 8): its first pixel's row in the slab, 8-row groups (output
// rows) SH * HWP rows apart. Only the stored layout is swizzled; the descriptor may start on any
// row of it, as the pattern is anchored at the slab's start.
YC_DEVICE unsigned long long halo_desc(const yc_u16* sx, int kk, int row0) {
  const int tap = kk / C, c = kk - tap * C, r = tap / KW, s = tap - r * KW;
  const int q = (row0 / TW * SH + r * DH) * HWP + s * DW % SW * HWS + s * DW / SW;
  return yc_wgmma_desc_swizzled(sx + c / SLAB * (HALO_PIX * SLAB) + q * SLAB + c % SLAB,
                                SH * HWP * SLAB * 2, SLAB_SWZ);
}

// HALO: the offset in the halo tile of depth index kk (tap (r, s), channel c) from that of tap
// (0, 0), channel 0.
YC_DEVICE int halo_tap(int kk) {
  const int tap = kk / C, c = kk - tap * C, r = tap / KW, s = tap - r * KW;
  return (r * DH * HWP + s * DW % SW * HWS + s * DW / SW) * CP + c;
}

