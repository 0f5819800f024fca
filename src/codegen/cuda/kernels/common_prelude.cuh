#ifndef YOLOC_CUDA_COMMON_PRELUDE
#define YOLOC_CUDA_COMMON_PRELUDE
struct yc_half {
  yc_u16 bits;
};
struct yc_bf16 {
  yc_u16 bits;
};
YC_DEVICE float yc_to_float(float v) { return v; }
YC_DEVICE float yc_to_float(yc_half v) { return yc_half_to_float(v.bits); }
YC_DEVICE float yc_to_float(yc_bf16 v) { return yc_bf16_to_float(v.bits); }
YC_DEVICE float yc_load(const float* p) { return *p; }
YC_DEVICE float yc_load(const yc_half* p) { return yc_half_to_float(p->bits); }
YC_DEVICE float yc_load(const yc_bf16* p) { return yc_bf16_to_float(p->bits); }
YC_DEVICE void yc_store(float* p, float v) { *p = v; }
YC_DEVICE void yc_store(yc_half* p, float v) { p->bits = yc_float_to_half(v); }
YC_DEVICE void yc_store(yc_bf16* p, float v) { p->bits = yc_float_to_bf16(v); }
// Two consecutive elements at a pointer aligned to two elements, in one access.
struct yc_f32x2 {
  float x, y;
};
YC_DEVICE void yc_load2(const float* p, float& a, float& b) {
  const yc_f32x2 v = *reinterpret_cast<const yc_f32x2*>(p);
  a = v.x;
  b = v.y;
}
YC_DEVICE void yc_store2(float* p, float a, float b) {
  *reinterpret_cast<yc_f32x2*>(p) = yc_f32x2{a, b};
}
YC_DEVICE void yc_load2(const yc_half* p, float& a, float& b) {
  const yc_u32 v = *reinterpret_cast<const yc_u32*>(p);
  a = yc_half_to_float(static_cast<yc_u16>(v & 0xffffu));
  b = yc_half_to_float(static_cast<yc_u16>(v >> 16));
}
YC_DEVICE void yc_store2(yc_half* p, float a, float b) {
  *reinterpret_cast<yc_u32*>(p) =
      static_cast<yc_u32>(yc_float_to_half(a)) | (static_cast<yc_u32>(yc_float_to_half(b)) << 16);
}
YC_DEVICE void yc_load2(const yc_bf16* p, float& a, float& b) {
  const yc_u32 v = *reinterpret_cast<const yc_u32*>(p);
  a = yc_bf16_to_float(static_cast<yc_u16>(v & 0xffffu));
  b = yc_bf16_to_float(static_cast<yc_u16>(v >> 16));
}
YC_DEVICE void yc_store2(yc_bf16* p, float a, float b) {
  *reinterpret_cast<yc_u32*>(p) =
      static_cast<yc_u32>(yc_float_to_bf16(a)) | (static_cast<yc_u32>(yc_float_to_bf16(b)) << 16);
}
// T if B, else F (NVRTC compiles without the standard library's <type_traits>).
template <bool B, class T, class F>
struct yc_if {
  typedef T type;
};
template <class T, class F>
struct yc_if<false, T, F> {
  typedef F type;
};
// N elements of T accessed as one unit (N * sizeof(T) bytes: 4, 8 or 16 for one vector access).
template <class T, int N>
struct alignas(sizeof(T) * N) yc_vec {
  T e[N];
};
// The biases of channels n and n + 1 of k (0 for those from k on). A bias is a 16-byte aligned
// constant: for an even n both come in one 8-byte load (the epilogues' channel pairs start
// even, so that is one load instruction instead of two).
YC_DEVICE void yc_bias2(const float* __restrict__ bias, int n, int k, float& b0, float& b1) {
  if ((n & 1) == 0 && n + 1 < k) {
    const yc_vec<float, 2> b = *reinterpret_cast<const yc_vec<float, 2>*>(bias + n);
    b0 = b.e[0];
    b1 = b.e[1];
    return;
  }
  b0 = n < k ? bias[n] : 0.f;
  b1 = n + 1 < k ? bias[n + 1] : 0.f;
}
YC_DEVICE float yc_act_none(float x) { return x; }
YC_DEVICE float yc_act_relu(float x) { return x > 0.f ? x : 0.f; }
YC_DEVICE float yc_act_silu(float x) { return x / (1.f + yc_exp(-x)); }
// SiLU of a value rounded to 16 bits next: x sigmoid(x) = h + h tanh(h), h = x / 2, one
// special-function instruction (yc_tanh_fast) where x / (1 + exp(-x)) takes two (ex2, rcp), at a
// quarter of the FMA rate. yolov8n at batch 128 computes 1.9 G SiLUs, about 0.9 ms of an H200's
// special-function units at two instructions each; with one its fp16 batch-128 network took
// 4.752 ms against 4.926 (bench/results/2026-12-03-h200-silu.json). Error on an H200 over x
// in [-40, 20): at most 9.8e-6 of max(|silu(x)|, 1), well below fp16's rounding (2^-11 = 4.9e-4;
// CudaGpuActivation.FastSiluAndSigmoidAccuracy holds it to that).
YC_DEVICE float yc_act_silu_fast(float x) {
  const float h = 0.5f * x;
  return h + h * yc_tanh_fast(h);
}
YC_DEVICE float yc_act_sigmoid(float x) { return 1.f / (1.f + yc_exp(-x)); }
YC_DEVICE float yc_act_sigmoid_fast(float x) { return yc_div_fast(1.f, 1.f + yc_exp_fast(-x)); }
#endif  // YOLOC_CUDA_COMMON_PRELUDE
