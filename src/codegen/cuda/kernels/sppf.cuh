namespace @SYM@_ns {
typedef @T@ T;
// Constants as enumerators: namespace-scope constexpr variables would each become a __device__
// global of the module.
enum : int {
  N = @N@, C = @C@, H = @H@, W = @W@, CB = @CB@, VL = @VL@, THREADS = @THREADS@,
  TH = @TH@, TW = @TW@, RH = @RH@, RW = @RW@, RP = @RP@, OFF_H = @OFF_H@, OFF_W = @OFF_W@,
  TILES_H = @TILES_H@, TILES_W = @TILES_W@, CHUNKS = @CHUNKS@,
  SV = VL >= 4 ? 4 : VL  // floats per shared-memory access
};
enum : yc_i64 { IS = @IS@, IO = @IO@ };
// A global access of VL elements: VB bytes, as 32-bit words when VB >= 4 (a struct of 16-bit
// elements the compiler splits into 16-bit stores).
enum : int { VB = VL * static_cast<int>(sizeof(T)), WORDS = VB >= 4 ? VB / 4 : 1 };
struct alignas(WORDS * 4) Words {
  yc_u32 w[WORDS];
};
struct alignas(SV * 4) SVec {
  float v[SV];
};
YC_DEVICE float from_bits(yc_u32 u) {
  union {
    yc_u32 i;
    float f;
  } b;
  b.i = u;
  return b.f;
}
YC_DEVICE yc_u32 to_bits(float f) {
  union {
    float f;
    yc_u32 i;
  } b;
  b.f = f;
  return b.i;
}
template <class U>
YC_DEVICE void load_vec(const U* __restrict__ p, float (&v)[VL]) {
  if constexpr (VB < 4) {
    v[0] = yc_load(p);
  } else {
    const Words in = *reinterpret_cast<const Words*>(p);
#pragma unroll
    for (int i = 0; i < WORDS; ++i) {
      if constexpr (sizeof(U) == 4) {
        v[i] = from_bits(in.w[i]);
      } else {
        U lo, hi;
        lo.bits = static_cast<yc_u16>(in.w[i] & 0xffffu);
        hi.bits = static_cast<yc_u16>(in.w[i] >> 16);
        v[2 * i] = yc_to_float(lo);
        v[2 * i + 1] = yc_to_float(hi);
      }
    }
  }
}
template <class U>
YC_DEVICE void store_vec(U* __restrict__ p, const float (&v)[VL]) {
  if constexpr (VB < 4) {
    yc_store(p, v[0]);
  } else {
    Words out;
#pragma unroll
    for (int i = 0; i < WORDS; ++i) {
      if constexpr (sizeof(U) == 4) {
        out.w[i] = to_bits(v[i]);
      } else {
        U lo, hi;
        yc_store(&lo, v[2 * i]);
        yc_store(&hi, v[2 * i + 1]);
        out.w[i] = static_cast<yc_u32>(lo.bits) | (static_cast<yc_u32>(hi.bits) << 16);
      }
    }
    *reinterpret_cast<Words*>(p) = out;
  }
}
YC_DEVICE float neg_inf() { return from_bits(0xff800000u); }
YC_DEVICE void put(float* __restrict__ d, const float (&v)[VL]) {
#pragma unroll
  for (int q = 0; q < VL; q += SV) {
    SVec s;
#pragma unroll
    for (int e = 0; e < SV; ++e) s.v[e] = v[q + e];
    *reinterpret_cast<SVec*>(d + q) = s;
  }
}
YC_DEVICE void get(const float* __restrict__ d, float (&v)[VL]) {
#pragma unroll
  for (int q = 0; q < VL; q += SV) {
    const SVec s = *reinterpret_cast<const SVec*>(d + q);
#pragma unroll
    for (int e = 0; e < SV; ++e) v[q + e] = s.v[e];
  }
}
// The region of x from pixel (h0, w0), channels c0..c0+CB, as fp32 [RH][RP] rows of RW pixels
// of CB channels; -inf outside the image (ONNX MaxPool's padding) and past the channels. A
// thread issues LB loads before it waits for the first: they are unconditional (positions
// outside read the nearest element inside, then take -inf), so no branch stands between them.
YC_DEVICE void load(const T* __restrict__ x, float* __restrict__ a, int n, int h0, int w0,
                    int c0) {
  enum : int { UNITS = RH * RW * (CB / VL), LB = 4 };
  for (int u0 = static_cast<int>(threadIdx.x); u0 < UNITS; u0 += LB * THREADS) {
    float v[LB][VL];
#pragma unroll
    for (int k = 0; k < LB; ++k) {
      const int u = u0 + k * THREADS;
      const int cv = u % (CB / VL), p = u / (CB / VL), r = p / RW, col = p % RW;
      const int h = h0 + r, w = w0 + col, c = c0 + cv * VL;
      const int hc = h < 0 ? 0 : h < H ? h : H - 1, wc = w < 0 ? 0 : w < W ? w : W - 1;
      const bool inside = u < UNITS && h == hc && w == wc && c < C;
      load_vec(x + (static_cast<yc_i64>((n * H + hc) * W + wc) * IS + IO + (c < C ? c : C - VL)),
               v[k]);
#pragma unroll
      for (int e = 0; e < VL; ++e) v[k][e] = inside ? v[k][e] : neg_inf();
    }
#pragma unroll
    for (int k = 0; k < LB; ++k) {
      const int u = u0 + k * THREADS;
      if (u < UNITS) {
        const int cv = u % (CB / VL), p = u / (CB / VL);
        put(a + (p / RW) * RP + (p % RW) * CB + cv * VL, v[k]);
      }
    }
  }
}
// dst[j] = the max of src[j + d], d in [-P, K - P), over the positions inside the line: LEN
// values STEP floats apart, held in registers.
template <int LEN, int STEP, int K, int P>
YC_DEVICE void window_max(const float* __restrict__ src, float* __restrict__ dst) {
  float v[LEN];
#pragma unroll
  for (int j = 0; j < LEN; ++j) v[j] = src[j * STEP];
#pragma unroll
  for (int j = 0; j < LEN; ++j) {
    float m = v[j];
#pragma unroll
    for (int d = 1; d <= P; ++d) {
      if (j - d >= 0) m = fmaxf(m, v[j - d]);
    }
#pragma unroll
    for (int d = 1; d < K - P; ++d) {
      if (j + d < LEN) m = fmaxf(m, v[j + d]);
    }
    dst[j * STEP] = m;
  }
}
// One stage in place in a (b is scratch): rows, then columns, of the channels below cn.
template <int KH, int PT, int KW, int PL>
YC_DEVICE void stage(float* __restrict__ a, float* __restrict__ b, int cn) {
  for (int i = static_cast<int>(threadIdx.x); i < RH * CB; i += THREADS) {
    const int r = i / CB, c = i % CB;
    if (c < cn) window_max<RW, CB, KW, PL>(a + r * RP + c, b + r * RP + c);
  }
  YC_SYNC();
  for (int i = static_cast<int>(threadIdx.x); i < RW * CB; i += THREADS) {
    if (i % CB < cn) window_max<RH, RP, KH, PT>(b + i, a + i);
  }
  YC_SYNC();
}
// The tile of a (from pixel (h0, w0), channel c0) into the channel slice OS, OO of y.
template <yc_i64 OS, yc_i64 OO>
YC_DEVICE void store_tile(const float* __restrict__ a, T* __restrict__ y, int n, int h0, int w0,
                          int c0) {
#pragma unroll 4
  for (int u = static_cast<int>(threadIdx.x); u < TH * TW * (CB / VL); u += THREADS) {
    const int cv = u % (CB / VL), p = u / (CB / VL), i = p / TW, j = p % TW;
    const int h = h0 + i, w = w0 + j, c = c0 + cv * VL;
    if (h >= H || w >= W || c >= C) continue;
    float v[VL];
    get(a + (i + OFF_H) * RP + (j + OFF_W) * CB + cv * VL, v);
    // The pixel index in 32 bits (N*H*W < 2^31), then one 64-bit offset: the words of a vector
    // then have addresses the compiler sees are consecutive, and it stores them in one access.
    store_vec(y + (static_cast<yc_i64>((n * H + h) * W + w) * OS + OO + c), v);
  }
}
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS) @SYM@(@PARAMS@) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  YC_DYNAMIC_SMEM(float, yc_smem);
  float* a = yc_smem;
  float* b = yc_smem + RH * RP;
  // Channel chunks fastest: the blocks running together share the pixels they read.
  int blk = static_cast<int>(blockIdx.x);
  const int cc = blk % CHUNKS;
  blk /= CHUNKS;
  const int tw = blk % TILES_W;
  blk /= TILES_W;
  const int th = blk % TILES_H, n = blk / TILES_H;
  const int h0 = th * TH, w0 = tw * TW, c0 = cc * CB, cn = C - c0 < CB ? C - c0 : CB;
  load(static_cast<const T*>(p_x), a, n, h0 - OFF_H, w0 - OFF_W, c0);
  YC_SYNC();
@STAGES@}
