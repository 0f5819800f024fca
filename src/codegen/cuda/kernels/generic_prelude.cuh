#ifndef YOLOC_CUDA_GENERIC_PRELUDE
#define YOLOC_CUDA_GENERIC_PRELUDE
YC_DEVICE float yc_sigmoid(float x) { return 1.f / (1.f + yc_exp(-x)); }
YC_DEVICE float yc_silu(float x) { return x / (1.f + yc_exp(-x)); }
YC_DEVICE float yc_relu1(float x) { return x > 0.f ? x : 0.f; }
YC_DEVICE float yc_h2f(yc_u16 h) { return yc_half_to_float(h); }
YC_DEVICE yc_u16 yc_f2h(float f) { return yc_float_to_half(f); }
namespace yc_m {
YC_DEVICE float fmax(float a, float b) { return fmaxf(a, b); }
YC_DEVICE float fmin(float a, float b) { return fminf(a, b); }
YC_DEVICE float tanh(float x) { return tanhf(x); }
YC_DEVICE float log(float x) { return logf(x); }
YC_DEVICE float sqrt(float x) { return sqrtf(x); }
YC_DEVICE float fabs(float x) { return fabsf(x); }
YC_DEVICE float pow(float a, float b) { return powf(a, b); }
}  // namespace yc_m
YC_DEVICE float yc_inf() {
  union {
    yc_u32 i;
    float f;
  } u;
  u.i = 0x7f800000u;
  return u.f;
}
#define YC_IFN YC_DEVICE
