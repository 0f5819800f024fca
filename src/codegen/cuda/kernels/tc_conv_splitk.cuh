// Split-K: the SPLITK blocks of a cluster (grid z, cluster dims (1, 1, SPLITK), so rank = z)
// each run a share of the depth steps, then sum their partial accumulators through distributed
// shared memory: no extra launch, no global workspace. Block z completes fragments (mi, ni) with
// (mi * NI + ni) % SPLITK == z, so the blocks share the reads and the epilogue.
YC_DEVICE bool splitk_owns(int mi, int ni) {
  return SPLITK == 1 || (mi * NI + ni) % SPLITK == static_cast<int>(blockIdx.z);
}
YC_DEVICE void splitk_reduce(float (&acc)[MI][NI][4], float* red, int tid) {
  // Every warp is done with the pipeline's tiles, which the partials overwrite: value e of
  // fragment f of all threads in turn, so that a warp's accesses are consecutive words.
  YC_SYNC();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[((mi * NI + ni) * 4 + e) * THREADS + tid] = acc[mi][ni][e];
  yc_cluster_sync();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      if (!splitk_owns(mi, ni)) continue;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float s = 0.f;
#pragma unroll
        for (int r = 0; r < SPLITK; ++r) {
          s += yc_ld_cluster_f32(red + ((mi * NI + ni) * 4 + e) * THREADS + tid, r);
        }
        acc[mi][ni][e] = s;
      }
    }
  }
  // A block's shared memory lives while it runs: none exits before its peers have read it.
  yc_cluster_sync();
}
