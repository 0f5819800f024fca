#ifndef YOLOC_DETECT_DEVICE_OPS
#define YOLOC_DETECT_DEVICE_OPS
YC_DEVICE float yc_fadd(float a, float b) { return __fadd_rn(a, b); }
YC_DEVICE float yc_fsub(float a, float b) { return __fsub_rn(a, b); }
YC_DEVICE float yc_fmul(float a, float b) { return __fmul_rn(a, b); }
YC_DEVICE float yc_fdiv(float a, float b) { return __fdiv_rn(a, b); }
YC_DEVICE double yc_dadd(double a, double b) { return __dadd_rn(a, b); }
YC_DEVICE double yc_dmul(double a, double b) { return __dmul_rn(a, b); }
YC_DEVICE double yc_ddiv(double a, double b) { return __ddiv_rn(a, b); }
YC_DEVICE float yc_floorf(float v) { return floorf(v); }
YC_DEVICE float yc_rintf(float v) { return rintf(v); }
// exp through double, rounded once: the correctly rounded expf of glibc but in rare cases (expf
// itself is off by up to 2 ulp).
YC_DEVICE float yc_expf_rn(float v) { return static_cast<float>(exp(static_cast<double>(v))); }
YC_DEVICE unsigned yc_float_bits(float v) { return __float_as_uint(v); }
#endif  // YOLOC_DETECT_DEVICE_OPS
