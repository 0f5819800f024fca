@B2B_FUNCTIONS@}  // namespace @SYM@_ns
@SPLITK_ARCH_CHECK@
YC_KERNEL void @LAUNCH_BOUNDS@ @CLUSTER_DIMS@
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_ @UPIN_PARAMS@ @B2B_PARAMS@) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(yc_u16, yc_smem);
  const yc_u16* __restrict__ x = static_cast<const yc_u16*>(x_);
  const yc_u16* __restrict__ w = static_cast<const yc_u16*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  @UPIN_DECL@
  yc_u16* sa = yc_smem;  // the ring of A tiles, or HALO's tile
  yc_u16* sb = yc_smem + B_AT;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31;
  // The warp's team and its place in the team's tile.
  const int team = tid / TEAM_THREADS, warp = tid % TEAM_THREADS >> 5;
  const int warp_m = WG ? warp / 4 / WARPS_N : warp / WARPS_N;
  const int warp_n = WG ? warp / 4 % WARPS_N : warp % WARPS_N;
  const int wrow0 = WG ? warp_m * 4 * WM + (warp & 3) * 16 : warp_m * WM;  // the warp's first row
  const int m0 = static_cast<int>(blockIdx.x) * BM, n0 = static_cast<int>(blockIdx.y) * BN;
  // This block's depth steps [kt0, kt1): its split's share (all of them without split-K).
  const int split = SPLITK > 1 ? static_cast<int>(blockIdx.z) : 0;
  const int kt0 = KT * split / SPLITK, kt1 = KT * (split + 1) / SPLITK;
  const int tile = static_cast<int>(blockIdx.x);

  if constexpr (PERS) {
    // Every depth step's weight tile once (they stay), with each team's first halo; a team's
    // barrier is bar.sync 1 + team (the block's own with one team).
    const auto team_sync = [team] {
      if constexpr (TEAMS == 1) {
        YC_SYNC();
      } else {
        YC_BAR_SYNC(1 + team, TEAM_THREADS);
      }
    };
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) load_b(sb + kt * B_STAGE, w, n0, kt, tid);
    const int ttid = tid - team * TEAM_THREADS, stride = static_cast<int>(gridDim.x) * TEAMS;
    yc_u16* const buf[2] = {sa + team * HALO_ELEMS, sa + (TEAMS == 1 ? 1 : team) * HALO_ELEMS};
    int t = tile * TEAMS + team;
    if (t < NTILES) load_halo<TEAM_THREADS>(buf[0], x, uin, t, ttid);
    yc_cp_async_commit();
    yc_cp_async_wait<0>();
    YC_SYNC();  // the weights and the first halos are visible to all
    for (int it = 0; t < NTILES; t += stride, ++it) {
      const yc_u16* cur = buf[it & 1];
      if (it > 0) {
        // This tile's halo has landed and is visible to the team; with one team, every warp is
        // also done with the other buffer (the previous tile's), which the next copy overwrites.
        yc_cp_async_wait<0>();
        team_sync();
      }
      if (TEAMS == 1 && t + stride < NTILES) load_halo(buf[(it + 1) & 1], x, uin, t + stride, ttid);
      float acc[MI][NI][4];
      zero_acc(acc);
      // All the tile's wgmmas in one group: no copy waits inside the depth loop.
      acc_fence(acc);
      yc_wgmma_fence();
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) wgmma_step<WN>(acc, cur, sb + kt * B_STAGE + warp_n * WN * BK, kt, warp_m);
      yc_wgmma_commit();
      yc_wgmma_wait<0>();
      acc_fence(acc);
      if constexpr (TEAMS > 1) {
        // Every warp of the team is done with its buffer: the next tile's halo lands there while
        // this one's epilogue runs (and the other team's wgmmas).
        team_sync();
        if (t + stride < NTILES) load_halo<TEAM_THREADS>(buf[0], x, uin, t + stride, ttid);
      }
      yc_cp_async_commit();
      store_tile(acc, y, up, res, bias, t, n0, tid, lane, wrow0, warp_n, yc_smem);
    }
    yc_cp_async_wait<0>();  // (the last, empty group)
    return;
  }

  // The pixels of the A rows this thread copies are the same at every depth step.
  ARows rows;
  if constexpr (!HALO) a_rows(rows, m0, tid);
  // HALO: this lane's A rows in the halo tile at tap (0, 0), channel 0.
  const yc_u16* hrow[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    const int row = wrow0 + mi * MSTEP + (lane & 15);
    hrow[mi] = sa + (row / TW * SH * HWP + row % TW) * CP + (lane >> 4) * 8;
  }

  float acc[MI][NI][4];
  zero_acc(acc);

@B2B_LOAD@
  // Steps kt0 .. kt0+AHEAD-1 in flight before the first use; one commit group per step, empty
  // past the last, so that wait<AHEAD - 1> below always means "step kt has landed" (HALO's tile
  // joins the first group).
  if constexpr (HALO) load_halo(sa, x, uin, tile, tid);
#pragma unroll
  for (int s = 0; s < AHEAD; ++s) {
    const int st = kt0 + s;
    if (st < kt1) {
      if constexpr (!HALO) load_a(sa + (st % STAGES) * A_STAGE, x, uin, rows, st, tid);
      load_b(sb + (st % STAGES) * B_STAGE, w, n0, st, tid);
    }
    yc_cp_async_commit();
  }
  for (int kt = kt0; kt < kt1; ++kt) {
    yc_cp_async_wait<AHEAD - 1>();
    // Step kt is visible to all threads, and all are done with step kt + AHEAD - STAGES (kt - 1,
    // or AS's kt - 2), whose buffer the copy issued next overwrites.
    YC_SYNC();
    const int next = kt + AHEAD;
    if (next < kt1) {
      if constexpr (!HALO) load_a(sa + (next % STAGES) * A_STAGE, x, uin, rows, next, tid);
      load_b(sb + (next % STAGES) * B_STAGE, w, n0, next, tid);
    }
    yc_cp_async_commit();
    const yc_u16* cb = sb + (kt % STAGES) * B_STAGE + warp_n * WN * LDS;
    if constexpr (AS) {
      // This step's wgmmas run while the warps wait for and issue the next step's; they are
      // waited for (wait<1>) one step later, before the barrier after which their slot is
      // overwritten.
      const yc_u16* ca = sa + (kt % STAGES) * A_STAGE + warp_m * 4 * WM * BK;
      acc_fence(acc);
      yc_wgmma_fence();
      wgmma_step<WN>(acc, HALO ? sa : ca, sb + (kt % STAGES) * B_STAGE + warp_n * WN * BK, kt, warp_m);
      yc_wgmma_commit();
      yc_wgmma_wait<1>();
      acc_fence(acc);
    } else if constexpr (WG) {
      // The A fragments of all the step's 16-deep slices first, then their wgmmas (B straight
      // from the step's tile), then the wait. A wgmma reads its A registers asynchronously, and
      // ptxas does not keep them apart from later writes: a fragment may not be rewritten before
      // the wait that covers its wgmma. (A version that loaded each slice's fragments after the
      // previous slice's wgmmas were issued, and waited for a step's wgmmas only after issuing
      // the next step's, failed 11 of 21 GPU conv tests on an H200; the host emulation now
      // reports the first of those rewrites too.)
      yc_u32 af[BK / 16][MI][4];
      const yc_u16* ca = sa + (kt % STAGES) * A_STAGE;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const int kk = kt * BK + ks * 16;
        if (HALO && KG % BK != 0 && kk >= KG) break;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          yc_ldmatrix_x4(af[ks][mi], HALO ? hrow[mi] + halo_tap(kk)
                                          : ca + (wrow0 + mi * MSTEP + (lane & 15)) * LDS +
                                                (lane >> 4) * 8 + ks * 16);
        }
      }
      yc_wgmma_fence();
      const yc_u16* cw = sb + (kt % STAGES) * B_STAGE + warp_n * WN * BK;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        if (HALO && KG % BK != 0 && kt * BK + ks * 16 >= KG) break;
        const unsigned long long desc = yc_wgmma_desc(cw + ks * 16 * 8, 128, BK * 16);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
          yc_wgmma<WN, BF16>(reinterpret_cast<float(&)[WN / 2]>(acc[mi]), af[ks][mi], desc);
      }
      yc_wgmma_commit();
      yc_wgmma_wait<0>();
    } else if constexpr (HALO && C % BK == 0) {
      // The step lies within one tap.
      const int tap = halo_tap(kt * BK);
      const yc_u16* at[MI];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) at[mi] = hrow[mi] + tap;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) warp_step_rows(acc, at, cb, LDS, ks * 16, lane);
    } else if constexpr (HALO) {
      // Each 16-deep slice lies within one tap (16 | C); the last step's slices past the depth
      // are skipped (zero weights, and no rows of the tile for their taps).
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        const int kk = kt * BK + ks * 16;
        if (KG % BK != 0 && kk >= KG) break;
        const int tap = halo_tap(kk) - ks * 16;  // warp_step_rows adds ks * 16 back
        const yc_u16* at[MI];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) at[mi] = hrow[mi] + tap;
        warp_step_rows(acc, at, cb, LDS, ks * 16, lane);
      }
    } else {
      const yc_u16* ca = sa + (kt % STAGES) * A_STAGE + wrow0 * LDS;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) warp_step(acc, ca, LDS, cb, LDS, ks * 16, lane);
    }
  }
  yc_cp_async_wait<0>();
  if constexpr (AS) {
    yc_wgmma_wait<0>();
    acc_fence(acc);
  }
  if constexpr (SPLITK > 1) splitk_reduce(acc, reinterpret_cast<float*>(yc_smem), tid);
@B2B_TAIL@
  store_tile(acc, y, up, res, bias, tile, n0, tid, lane, wrow0, warp_n, yc_smem);
}
