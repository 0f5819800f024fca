typedef {in_t} InT;
typedef {out_t} OutT;
// Constants as enumerators: namespace-scope constexpr variables would each become a __device__
// global of the module.
enum : int {{
  N = {n}, C = {c}, H = {h}, W = {w}, K = {k}, OH = {oh}, OW = {ow},
  KH = {kh}, KW = {kw}, SH = {sh}, SW = {sw}, PH = {ph}, PW = {pw}, DH = {dh}, DW = {dw},
  M = N * OH * OW,
  KG = KH * KW * C,
  RES = {res}
}};
enum : yc_i64 {{ IS = {is}, IO = {io}, OS = {os}, OO = {oo}, RS = {rs}, RO = {ro} }};
// The output and the residual: channels innermost (NHWC), or planes of OPLANE elements (NCHW:
// the detect head's convs, whose readers walk the pixels), the map's OH*OW pixels OBASE elements
// into each (OH*OW and 0 but for the class scores a conv stores into the detector's output).
// Only NHWC pairs channels n, n + 1.
enum : yc_i64 {{ OPLANE = {oplane}, OBASE = {obase} }};
enum : int {{
  OUT_NCHW = {out_nchw},
  PAIR_Y = !OUT_NCHW && OS % 2 == 0 && OO % 2 == 0,
  PAIR_R = !OUT_NCHW && RS % 2 == 0 && RO % 2 == 0
}};
// The upsampled copy (UP, NHWC only; CudaConvTask::up): output pixel (img, oh, ow) is also stored
// to the USH x USW pixels (oh * USH + i, ow * USW + j) of `up`, a buffer of US channels whose
// slice starts at channel UO.
enum : int {{ UP = {up}, USH = {ush}, USW = {usw} }};
enum : yc_i64 {{ US = {us}, UO = {uo}, UROW = static_cast<yc_i64>(OW) * USW * US }};
enum : int {{ PAIR_U = UP && US % 2 == 0 && UO % 2 == 0 }};
// Element of channel n of the first copy of pixel m; copy (i, j) lies i * UROW + j * US further.
YC_DEVICE yc_i64 up_at(int m, int n) {{
  const int img = m / (OH * OW), p = m - img * (OH * OW), oh = p / OW, ow = p - oh * OW;
  return ((static_cast<yc_i64>(img) * OH + oh) * USH * (static_cast<yc_i64>(OW) * USW) +
          static_cast<yc_i64>(ow) * USW) * US + UO + n;
}}
YC_DEVICE void up_store(OutT* __restrict__ up, int m, int n, float v) {{
  if constexpr (UP) {{
    const yc_i64 u = up_at(m, n);
#pragma unroll
    for (int i = 0; i < USH; ++i)
#pragma unroll
      for (int j = 0; j < USW; ++j) yc_store(up + (u + i * UROW + j * US), v);
  }}
}}
YC_DEVICE void up_store2(OutT* __restrict__ up, int m, int n, float v0, float v1) {{
  if constexpr (UP) {{
    const yc_i64 u = up_at(m, n);
#pragma unroll
    for (int i = 0; i < USH; ++i)
#pragma unroll
      for (int j = 0; j < USW; ++j) {{
        OutT* p = up + (u + i * UROW + j * US);
        if constexpr (PAIR_U) {{
          yc_store2(p, v0, v1);
        }} else {{
          yc_store(p, v0);
          yc_store(p + 1, v1);
        }}
      }}
  }}
}}
// Element of pixel m, channel n in a buffer of `stride` channels whose slice starts at channel
// `offset`.
YC_DEVICE yc_i64 out_at(int m, int n, yc_i64 stride, yc_i64 offset) {{
  if constexpr (OUT_NCHW) {{
    const int img = m / (OH * OW);
    return (static_cast<yc_i64>(img) * stride + offset + n) * OPLANE + OBASE + (m - img * (OH * OW));
  }} else {{
    return static_cast<yc_i64>(m) * stride + offset + n;
  }}
}}
// The activation (the part of the epilogue after the bias, before the residual and stores).
YC_DEVICE float act(float v) {{ return {act}(v); }}
YC_DEVICE void epilogue(OutT* __restrict__ y, OutT* __restrict__ up, const OutT* __restrict__ res,
                        const float* __restrict__ bias, int m, int n, float v) {{
  if (m >= M || n >= K) return;
  v = {act}(v + bias[n]);
  if constexpr (RES) v += yc_load(res + out_at(m, n, RS, RO));
  yc_store(y + out_at(m, n, OS, OO), v);
  up_store(up, m, n, v);
}}
YC_DEVICE void epilogue2(OutT* __restrict__ y, OutT* __restrict__ up,
                         const OutT* __restrict__ res, const float* __restrict__ bias, int m, int n,
                         float v0, float v1) {{
  if (m >= M || n >= K) return;
  if (n + 1 >= K) {{
    epilogue(y, up, res, bias, m, n, v0);
    return;
  }}
  float b0, b1;
  yc_bias2(bias, n, K, b0, b1);
  v0 = {act}(v0 + b0);
  v1 = {act}(v1 + b1);
  if constexpr (RES) {{
    const yc_i64 r = out_at(m, n, RS, RO);
    if constexpr (PAIR_R) {{
      float a, b;
      yc_load2(res + r, a, b);
      v0 += a;
      v1 += b;
    }} else {{
      v0 += yc_load(res + r);
      v1 += yc_load(res + out_at(m, n + 1, RS, RO));
    }}
  }}
  const yc_i64 o = out_at(m, n, OS, OO);
  if constexpr (PAIR_Y) {{
    yc_store2(y + o, v0, v1);
  }} else {{
    yc_store(y + o, v0);
    yc_store(y + out_at(m, n + 1, OS, OO), v1);
  }}
  up_store2(up, m, n, v0, v1);
}}
// Channels n .. n + NV - 1 of pixel m (n a multiple of NV): 16-byte accesses (fewer bytes for
// short vectors) where the slices keep them aligned, pairs otherwise and for the last channels.
template <int NV>
YC_DEVICE void epilogue_vec(OutT* __restrict__ y, OutT* __restrict__ up,
                            const OutT* __restrict__ res, const float* __restrict__ bias, int m,
                            int n, const float (&v)[NV]) {{
  enum : int {{
    CH = 16 / static_cast<int>(sizeof(OutT)) < NV ? 16 / static_cast<int>(sizeof(OutT)) : NV,
    VEC = !OUT_NCHW && NV % CH == 0 && OS % CH == 0 && OO % CH == 0 && (!RES || (RS % CH == 0 && RO % CH == 0)),
    VEC_U = US % CH == 0 && UO % CH == 0  // the copies in whole vectors too
  }};
  if (!VEC || n % CH != 0 || n + NV > K) {{
#pragma unroll
    for (int e = 0; e + 1 < NV; e += 2) epilogue2(y, up, res, bias, m, n + e, v[e], v[e + 1]);
    if constexpr (NV % 2 != 0) epilogue(y, up, res, bias, m, n + NV - 1, v[NV - 1]);
    return;
  }}
  if (m >= M) return;
  const yc_i64 o = static_cast<yc_i64>(m) * OS + OO + n;
#pragma unroll
  for (int i = 0; i < NV; i += CH) {{
    float a[CH];
    if constexpr (CH % 4 == 0) {{  // n + i is a multiple of CH: whole 16-byte bias vectors
#pragma unroll
      for (int e = 0; e < CH; e += 4) {{
        const yc_vec<float, 4> b = *reinterpret_cast<const yc_vec<float, 4>*>(bias + n + i + e);
#pragma unroll
        for (int q = 0; q < 4; ++q) a[e + q] = {act}(v[i + e + q] + b.e[q]);
      }}
    }} else {{
#pragma unroll
      for (int e = 0; e < CH; ++e) a[e] = {act}(v[i + e] + bias[n + i + e]);
    }}
    if constexpr (RES) {{
      const yc_i64 at = static_cast<yc_i64>(m) * RS + RO + n + i;
      const yc_vec<OutT, CH> r = *reinterpret_cast<const yc_vec<OutT, CH>*>(res + at);
#pragma unroll
      for (int e = 0; e < CH; ++e) a[e] += yc_to_float(r.e[e]);
    }}
    yc_vec<OutT, CH> out;
#pragma unroll
    for (int e = 0; e < CH; ++e) yc_store(&out.e[e], a[e]);
    *reinterpret_cast<yc_vec<OutT, CH>*>(y + (o + i)) = out;
    if constexpr (UP) {{
      const yc_i64 u = up_at(m, n + i);
#pragma unroll
      for (int r = 0; r < USH; ++r)
#pragma unroll
        for (int q = 0; q < USW; ++q) {{
          OutT* p = up + (u + r * UROW + q * US);
          if constexpr (VEC_U) {{
            *reinterpret_cast<yc_vec<OutT, CH>*>(p) = out;
          }} else {{
#pragma unroll
            for (int e = 0; e < CH; ++e) p[e] = out.e[e];
          }}
        }}
    }}
  }}
}}
