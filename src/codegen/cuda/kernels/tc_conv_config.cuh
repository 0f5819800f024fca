@WGMMA_SOURCE@enum : int {
  BM = @BM@, BN = @BN@, BK = @BK@, WM = @WM@, WN = @WN@, STAGES = @STAGES@, SPLITK = @SPLITK@,
  L1 = @L1@,    // A tiles copied through L1 (cp.async.ca): the taps of a kxk window re-read pixels
  EPI = @EPI@,  // the output tile staged in shared memory, stored in 16-byte pieces
  WARPS_N = BN / WN, TEAM_THREADS = (BM / WM) * WARPS_N * 32,
  // Persistent blocks (PERS, see NTILES): one team of warps, or two (TEAM_THREADS each).
  PERS = @PERS@, TEAMS = PERS == 2 ? 2 : 1, THREADS = TEAM_THREADS * TEAMS,
  MI = WM / 16, NI = WN / 8,
  // Warpgroup MMA (sm_90a): a warpgroup of 4 warps computes 4 WM x WN (wgmma m64nWNk16, B from
  // shared memory; WG = 2: A too), its warp r the rows 16 r + 64 mi; without it a warp computes
  // WM x WN with mma.sync, its rows 16 mi. MSTEP: the rows from one m-tile of a warp to its next.
  WG = @WG@, MSTEP = WG ? 64 : 16, BF16 = @BF16@,
  // WG = 2 (AS): a step's wgmmas run while the next step is issued, so the copies run
  // AHEAD = STAGES - 2 steps ahead (the slot a copy overwrites was read by the wgmmas two steps
  // back, which every warpgroup has waited for).
  AS = WG == 2, AHEAD = AS ? STAGES - 2 : STAGES - 1,
  // AS: both tiles in rows of BK halves (2 BK bytes) swizzled in 16-byte chunks over 8 rows
  // (wgmma's 32B, 64B or 128B swizzle: the tensor cores read 8 rows of a chunk column without
  // bank conflicts); SWZ = log2(CPR), 0 without.
  SWZ = !AS ? 0 : BK == 16 ? 1 : BK == 32 ? 2 : 3,
  // 16 bytes of padding per row: the 8 rows an ldmatrix reads then fall on distinct banks.
  LDS = BK + 8,
  KG8 = (KG + 7) / 8 * 8,
  KT = (KG8 + BK - 1) / BK,
  CPR = BK / 8,  // 16-byte chunks per tile row
  A_CHUNKS = BM * CPR, B_CHUNKS = BN * CPR,
  A_ITERS = (A_CHUNKS + THREADS - 1) / THREADS,
  B_ITERS = (B_CHUNKS + THREADS - 1) / THREADS,
  // (AS: unpadded rows, so that every stage starts at a multiple of the swizzle's 8 rows.)
  A_STAGE = BM * (AS ? BK : LDS), B_STAGE = BN * (AS ? BK : LDS),
  // 16-byte copies need 8 channels of one pixel at a 16-byte aligned address.
  NCHW_IN = @NCHW_IN@,  // x: dense NCHW float32, converted while gathering
  VEC = !NCHW_IN && C % 8 == 0 && IS % 8 == 0 && IO % 8 == 0,
  OUTSIDE = -(1 << 28),  // input row of a pixel past M: every tap is out of bounds
  // Halo tiles (HALO = TW > 0): a block's BM pixels are TH x TW of one image, and its input
  // window (HH x HWD pixels, all C channels) is copied to shared memory once; each depth step's A
  // operand is then that tile read at the step's tap, and only the weights stream through the
  // ring. Columns are stored by phase (column % SW), so that consecutive output columns read
  // consecutive stored pixels at every tap; a pixel's CP halves are an odd number of 16-byte
  // chunks (C is a multiple of 16), so that the 8 rows an ldmatrix reads fall on distinct
  // banks.
  HALO = @HALO@,
  TW = HALO ? HALO : 1, TH = BM / TW,
  TILES_X = (OW + TW - 1) / TW, TILES = TILES_X * ((OH + TH - 1) / TH),
  HH = (TH - 1) * SH + (KH - 1) * DH + 1, HWD = (TW - 1) * SW + (KW - 1) * DW + 1,
  HWS = (HWD + SW - 1) / SW, HWP = HWS * SW,
  CP = C + 8,
  // AS with HALO: the tensor cores read A from the tile, so it is stored as wgmma's swizzled rows:
  // in slabs of SLAB channels (64, 32 or 16: the widest dividing C), each slab the window's
  // pixels (in the order above) as rows of SLAB halves, 16-byte chunks swizzled over 8 rows like
  // the ring's tiles (128B, 64B or 32B mode). A slab holds HALO_PIX rows (a multiple of 8), so
  // every slab starts on its swizzle pattern. With rows of TW = 8 pixels, the 8 pixels of an
  // output row at one tap are 8 consecutive rows of a slab, and the next output row is
  // SH * HWP rows further: one descriptor per m-tile (8 output rows) and 16-deep slice.
  SLAB = !(AS && HALO) ? 8 : C % 64 == 0 ? 64 : C % 32 == 0 ? 32 : 16,  // (8: unused)
  SLAB_SWZ = SLAB == 64 ? 3 : SLAB == 32 ? 2 : 1,
  HALO_PIX = (HH * HWP + 7) / 8 * 8,
  // (AS: rounded up to 1024 bytes, where the ring's swizzled tiles start.)
  HALO_ELEMS = !HALO ? 0 : AS ? (HALO_PIX * C + 511) / 512 * 512 : HH * HWP * CP,
  HALO_CHUNKS = HH * HWD * (C / 8),
  // Persistent blocks (PERS, wg=2 on halo tiles): the weight tiles of every depth step stay in
  // shared memory (KT of them after two halo buffers), and a team computes tile after tile
  // (blockIdx.x * TEAMS + team, then every (gridDim.x * TEAMS)-th of the NTILES). One team copies
  // the next tile's halo into the other buffer while this one's wgmmas run; two teams have a
  // buffer each, and copy the next tile's halo once their wgmmas are done. The staged output tile
  // (EPI, one team only) has shared memory of its own, after the weights.
  NTILES = HALO ? N * TILES : (M + BM - 1) / BM,
  B_AT = HALO ? (PERS ? 2 : 1) * HALO_ELEMS : STAGES * A_STAGE,  // halves before the B tiles
  EPI_AT = PERS ? B_AT + KT * B_STAGE : 0  // halves before the staged output tile
};
static_assert(!HALO || (VEC && C % 16 == 0 && BM % TW == 0),
              "halo tiles: 16-byte copies, 16-deep slices within a tap");
static_assert(!AS || ((!HALO || TW == 8) && AHEAD >= 1 && BK <= 64),
              "A from shared memory: im2col rows or halo rows of 8 pixels, 3+ stages, rows of at "
              "most 128 bytes");
static_assert(!PERS || (AS && HALO && SPLITK == 1 && (TEAMS == 1 || !EPI)),
              "persistent blocks: wg=2 on halo tiles, fragment epilogues for two teams");

// Output pixel (GEMM row) of row `row` of tile `tile` (a block's blockIdx.x, or with PERS each
// of the tiles it walks); M for a halo tile's pixels past the image's edge, which the epilogue
// skips.
YC_DEVICE int out_pixel(int tile, int row) {
  if constexpr (!HALO) {
    return tile * BM + row;
  } else {
    const int img = tile / TILES, t = tile % TILES;
    const int oh = t / TILES_X * TH + row / TW, ow = t % TILES_X * TW + row % TW;
    return oh < OH && ow < OW ? (img * OH + oh) * OW + ow : M;
  }
}

