#pragma once
/// Output comparison for the ONNX node tests, with the per-dtype tolerances in one place.
#include <string>

#include "yoloc/tensor.h"

namespace yoloc::conformance {

/// |actual - expected| <= atol + rtol * |expected| elementwise; both zero means exact.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/// The tolerance for outputs of a dtype: the ONNX backend test defaults (rtol 1e-3, atol 1e-7) for
/// float32/float64, two units in the last place for the 16-bit floats (whose one-ulp rounding
/// differences alone are ~1e-3 / ~8e-3 relative), exact for integers and bool.
Tolerance tolerance_for(DType t);

/// Compares an output with its expected value: same dtype, same shape, values within
/// tolerance_for(dtype), NaN equal to NaN, infinities equal only to themselves. Returns "" when
/// they agree, else one line saying how many elements differ and where the worst one is.
std::string compare_tensors(const Tensor& expected, const Tensor& actual);

}  // namespace yoloc::conformance
