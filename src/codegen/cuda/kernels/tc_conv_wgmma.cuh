// AS: depth step kt's wgmmas (not committed), both operands by descriptors: the warpgroup's
// 64-row m-tiles of A (HALO: the halo tile `a` at the slices' taps; else the step's stage `a` of
// im2col rows, at the warpgroup's first row) and its WN channels of B (`cw`: the step's weight
// tile at the warp's first channel), 16 deep a wgmma. Rows of 2 BK bytes, 8 rows 16 BK bytes
// apart (SBO); a 16-deep slice starts 32 bytes into them. (A template, N = WN, so that only a
// kernel that calls it names yc_wgmma_ss<N>: another kernel of the same module may specialize
// that after this one, which an instantiation here would precede.)
template <int N>
YC_DEVICE void wgmma_step(float (&acc)[MI][NI][4], const yc_u16* a, const yc_u16* cw, int kt,
                          int warp_m) {
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) {
    // (HALO: the last step's slices past the depth have no tap; their weights are zeros.)
    if (HALO && KG % BK != 0 && kt * BK + ks * 16 >= KG) break;
    const unsigned long long desc_b = yc_wgmma_desc_swizzled(cw + ks * 16, BK * 16, SWZ);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const unsigned long long desc_a =
          HALO ? halo_desc(a, kt * BK + ks * 16, warp_m * 4 * WM + mi * 64)
               : yc_wgmma_desc_swizzled(a + mi * 64 * BK + ks * 16, BK * 16, SWZ);
      yc_wgmma_ss<N, BF16>(reinterpret_cast<float(&)[N / 2]>(acc[mi]), desc_a, desc_b);
    }
  }
}

