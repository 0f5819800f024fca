enum : int {
  VEC = @VEC@, PX = @PX@, THREADS = @THREADS@,
  CV = (C + VEC - 1) / VEC,   // channel vectors of a pixel
  OWT = (OW + PX - 1) / PX,   // column groups of an output row
  SPAN = (PX - 1) * SW + (KW - 1) * DW + 1,  // input columns of a window row the PX windows read
  CP = (C + 7) / 8 * 8,       // channels of a packed weight row
  // Input pieces of up to 16 bytes where the slice keeps them aligned; element loads otherwise.
  CHI = 16 / static_cast<int>(sizeof(InT)) < VEC ? 16 / static_cast<int>(sizeof(InT)) : VEC,
  VEC_IN = C % VEC == 0 && IS % CHI == 0 && IO % CHI == 0,
  VEC_W = VEC % 4 == 0  // a thread's weights of a tap as float4s
};
enum : yc_i64 { ITEMS = static_cast<yc_i64>(N) * OH * OWT * CV };

// Channels c0 .. c0 + VEC - 1 of the input pixel at element `at` (zeros past C).
YC_DEVICE void load_pixel(const InT* __restrict__ x, yc_i64 at, int c0, float (&v)[VEC]) {
  if constexpr (VEC_IN) {
#pragma unroll
    for (int i = 0; i < VEC; i += CHI) {
      const yc_vec<InT, CHI> p = *reinterpret_cast<const yc_vec<InT, CHI>*>(x + at + i);
#pragma unroll
      for (int e = 0; e < CHI; ++e) v[i + e] = yc_to_float(p.e[e]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] = c0 + e < C ? yc_load(x + at + e) : 0.f;
  }
}
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS)
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  const InT* __restrict__ x = static_cast<const InT*>(x_);
  const float* __restrict__ w = static_cast<const float*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  const yc_i64 item = static_cast<yc_i64>(blockIdx.x) * THREADS + threadIdx.x;
  if (item >= ITEMS) return;
  // Consecutive threads: consecutive channel vectors of one pixel group.
  const int cv = static_cast<int>(item % CV);
  yc_i64 rest = item / CV;
  const int owt = static_cast<int>(rest % OWT);
  rest /= OWT;
  const int oh = static_cast<int>(rest % OH), img = static_cast<int>(rest / OH);
  const int c0 = cv * VEC, ow0 = owt * PX;
  const yc_i64 image = static_cast<yc_i64>(img) * H * W * IS + IO + c0;

  float acc[PX][VEC];
#pragma unroll
  for (int p = 0; p < PX; ++p)
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[p][e] = 0.f;

#pragma unroll
  for (int r = 0; r < KH; ++r) {
    const int ih = oh * SH - PH + r * DH;
    if (static_cast<unsigned>(ih) >= static_cast<unsigned>(H)) continue;
    float wr[KW][VEC];
#pragma unroll
    for (int s = 0; s < KW; ++s) {
      const float* ws = w + (r * KW + s) * CP + c0;
      if constexpr (VEC_W) {
#pragma unroll
        for (int e = 0; e < VEC; e += 4) {
          const yc_vec<float, 4> q = *reinterpret_cast<const yc_vec<float, 4>*>(ws + e);
#pragma unroll
          for (int i = 0; i < 4; ++i) wr[s][e + i] = q.e[i];
        }
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) wr[s][e] = ws[e];
      }
    }
    const yc_i64 row = image + static_cast<yc_i64>(ih) * W * IS;
#pragma unroll
    for (int j = 0; j < SPAN; ++j) {
      const int iw = ow0 * SW - PW + j;
      if (static_cast<unsigned>(iw) >= static_cast<unsigned>(W)) continue;
      float v[VEC];
      load_pixel(x, row + static_cast<yc_i64>(iw) * IS, c0, v);
      // Input column j is tap s of output pixel p where p * SW + s * DW == j.
#pragma unroll
      for (int p = 0; p < PX; ++p)
#pragma unroll
        for (int s = 0; s < KW; ++s)
          if (p * SW + s * DW == j) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[p][e] = fmaf(v[e], wr[s][e], acc[p][e]);
          }
    }
  }
#pragma unroll
  for (int p = 0; p < PX; ++p) {
    if (ow0 + p >= OW) break;
    const int m = (img * OH + oh) * OW + ow0 + p;
    epilogue_vec<VEC>(y, up, res, bias, m, c0, acc[p]);
  }
}
