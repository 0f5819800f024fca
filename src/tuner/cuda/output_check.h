#pragma once
/// The CUDA measurer's check of a candidate's output against the reference (the default config's
/// output on the same device and inputs), kept apart from the worker so that it runs without a GPU.
#include <cstdint>
#include <string>

#include "yoloc/tensor.h"

namespace yoloc::tuner {

/// Element i of n stored as `t` (fp32, fp16, bf16) as a double; NaN for other dtypes.
double stored_element(const char* p, DType t, uint64_t i);

/// The largest magnitude among n elements of a float storage dtype (NaNs skipped; 0 for none).
double largest_magnitude(const char* p, DType t, uint64_t n);

/// "" when every element of `got` equals `ref`'s or lies within
///   atol + rtol * |ref| + range,   range = rtol * ref_max for fp16 and bf16 outputs, else 0,
/// where ref_max is largest_magnitude(ref). The range term: a 16-bit output's configs may round
/// their operands differently (the stem's FMA configs multiply the fp32 image and weights, its
/// default rounds both to fp16 first), which moves an output by a share of the terms it sums, not
/// of its own value; a wrong kernel (a missing tap, a stale tile, NaN) is off by far more.
/// Otherwise "element E is X where the default config computes Y" for the first element off.
/// Elements of other dtypes must be equal bytes.
std::string output_mismatch(const char* got, const char* ref, uint64_t n, DType t, double atol,
                            double rtol, double ref_max);

}  // namespace yoloc::tuner
