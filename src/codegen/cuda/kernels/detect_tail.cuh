namespace @SYM@_ns {
@BOX_UNIT@enum : int { N = @N@, C = @C@, CC = @CC@, CO = @CO@, THREADS = @THREADS@, TILES = @TILES@ };
// A class unit: the sigmoids of classes c0 .. c0 + CC.
template <class TI>
YC_DEVICE void class_unit(const TI* __restrict__ x, yc_i64 sc, int c0, TO* __restrict__ y) {
#pragma unroll 4
  for (int c = c0; c < c0 + CC; ++c) {
    if (c < C) yc_store(y + (CO + c) * OC, @SIGMOID@(yc_load(x + c * sc)));
  }
}
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS) @SYM@(@PARAMS@) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  const int unit = static_cast<int>(blockIdx.x) / TILES;
  const int i = static_cast<int>(blockIdx.x) % TILES * THREADS + static_cast<int>(threadIdx.x);
  if (i >= N * A) return;
  const int n = i / A, a = i % A;
  TO* y = static_cast<TO*>(p_out) + (static_cast<yc_i64>(n) * ON + static_cast<yc_i64>(a) * OA);
@LEVELS@}
