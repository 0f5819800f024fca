typedef @XT@ XT;  // input storage
enum : int {
  TW = @TW@, TH = @TH@, PT = @PT@, KB = @KB@, TN = @TN@,
  MMA = @MMA@,  // tensor-core tiles (else FMAs)
  // Channel groups and thread (FMA) or m-tile (MMA: 16 pixels of a tile row) rows of a block.
  GN = KB / TN, TY = TH / PT,
  THREADS = MMA ? 32 * GN * (TW / 16) * TY : GN * TW * TY,
  NCHW_IN = @NCHW_IN@,  // x: dense NCHW XT, the image (else NHWC XT in its slice)
  TAPS = C * KH * KW,
  KP = (K + 63) / 64 * 64,  // weights per tap in the packed layout
  // The input tile: the image rows and columns the block's output tile reads.
  IHT = (TH - 1) * SH + (KH - 1) * DH + 1,
  IWT = (TW - 1) * SW + (KW - 1) * DW + 1,
  // Tile column ic is stored at (ic % SW) * PC + ic / SW: at a tap, consecutive output columns
  // read consecutive words.
  PC = (IWT + SW - 1) / SW,
  LD = @LD@, CS = @CS@,  // words per stored tile row and channel
  // The pairs path (Geometry::set_pairs): OFF, KX0, pairs per window row, halves a row loads
  // (LDH0) and holds (LDH), halves per channel.
  OFF = @OFF@, KX0 = @KX0@, PPR = @PPR@, LDH0 = @LDH0@, LDH = @LDH@, CSH = @CSH@,
  TILES_X = (OW + TW - 1) / TW, TILES_Y = (OH + TH - 1) / TH,
  // The loader: LW consecutive threads per tile row, LR rows at a time.
  LW = @LW@, LR = THREADS / LW,
  QC = (IWT + LW - 1) / LW, QR = (IHT + LR - 1) / LR,
  // Rows per batch of loads: about 40 values in registers.
  RB = 40 / (QC * C) < 1 ? 1 : 40 / (QC * C) < QR ? 40 / (QC * C) : QR,
  W_PIECES = TAPS * KB / 4, W_ITERS = (W_PIECES + THREADS - 1) / THREADS
};
static_assert(THREADS % LW == 0 && KB % 4 == 0 && TN % 4 == 0, "direct conv geometry");
// The MMA paths' accumulators, zeroed.
template <int P, int Q>
YC_DEVICE void zero_acc(float (&acc)[P][Q][4]) {
#pragma unroll
  for (int i = 0; i < P; ++i)
#pragma unroll
    for (int j = 0; j < Q; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS)
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(float, yc_smem);
  const XT* __restrict__ x = static_cast<const XT*>(x_);
  const float* __restrict__ w = static_cast<const float*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  float* sw = yc_smem;              // [TAPS][KB]
  float* si = yc_smem + TAPS * KB;  // [C][CS]: [IHT][LD] and padding
  const int tid = static_cast<int>(threadIdx.x);
  const int bx = static_cast<int>(blockIdx.x), n0 = static_cast<int>(blockIdx.y) * KB;
  const int img = bx / (TILES_X * TILES_Y);
  const int oy0 = bx / TILES_X % TILES_Y * TH, ox0 = bx % TILES_X * TW;
  const int ih0 = oy0 * SH - PH, iw0 = ox0 * SW - PW;

  // The block's channels of every tap, in 16-byte pieces.
#pragma unroll
  for (int j = 0; j < W_ITERS; ++j) {
    const int i = tid + j * THREADS;
    if (W_PIECES % THREADS != 0 && i >= W_PIECES) break;
    const int tap = i / (KB / 4), k = i % (KB / 4) * 4;
    *reinterpret_cast<yc_vec<float, 4>*>(sw + tap * KB + k) =
        *reinterpret_cast<const yc_vec<float, 4>*>(w + (static_cast<yc_i64>(tap) * KP + n0 + k));
  }
@TILE@  YC_SYNC();

@COMPUTE@}
