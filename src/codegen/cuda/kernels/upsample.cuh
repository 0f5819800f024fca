namespace @SYM@_ns {
// One 16-byte piece of a pixel's channels.
struct alignas(16) Piece {
  yc_u32 v[4];
};
enum : yc_i64 {
  N = @N@, C = @C@, H = @H@, W = @W@, SH = @SH@, SW = @SW@, VEC = @VEC@, THREADS = @THREADS@,
  PX = @PX@, PIECES = C / VEC, TOTAL = N * H * W * PIECES, IS = @IS@, IO = @IO@, OS = @OS@,
  OO = @OO@
};
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS) @SYM@(const void* __restrict__ x_,
                                                          void* __restrict__ y_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  const Piece* __restrict__ x = static_cast<const Piece*>(x_);
  Piece* __restrict__ y = static_cast<Piece*>(y_);
  const yc_i64 first = static_cast<yc_i64>(blockIdx.x) * THREADS * PX + threadIdx.x;
#pragma unroll
  for (int k = 0; k < PX; ++k) {
    const yc_i64 i = first + static_cast<yc_i64>(k) * THREADS;
    if (i >= TOTAL) return;
    const yc_i64 p = i % PIECES, pix = i / PIECES;
    const yc_i64 w = pix % W, h = pix / W % H, n = pix / (W * H);
    const Piece v = x[(((n * H + h) * W + w) * IS + IO) / VEC + p];
#pragma unroll
    for (int dy = 0; dy < SH; ++dy) {
#pragma unroll
      for (int dx = 0; dx < SW; ++dx) {
        y[(((n * H * SH + h * SH + dy) * (W * SW) + w * SW + dx) * OS + OO) / VEC + p] = v;
      }
    }
  }
}
