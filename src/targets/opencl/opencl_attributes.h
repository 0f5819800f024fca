#pragma once
/// The OpenCL target's attributes (what the passes ask of it): plain NCHW activations (pixels of
/// a channel dense: work items along a row read neighbouring words), fp32, a detector's pre-
/// and post-processing on the host.
#include "passes/target_attributes.h"

namespace yoloc::targets {

inline TargetAttributes opencl_attributes() {
  TargetAttributes a;
  a.quantize_ops = false;  // no int8 kernels: quantize / dequantize run as float fake-quant
  a.name = "opencl";
  return a;
}

}  // namespace yoloc::targets
