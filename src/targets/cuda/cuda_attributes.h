#pragma once
/// The CUDA target's attributes (what the passes ask of it): NHWC activations for the tensor
/// cores (channel-major reads stored NCHW), fp16 / bf16 computed through narrow storage, a
/// detector's pre- and post-processing on the GPU.
#include "passes/target_attributes.h"

namespace yoloc::targets {

inline TargetAttributes cuda_attributes() {
  TargetAttributes a;
  a.quantize_ops = false;  // no int8 kernels: quantize / dequantize run as float fake-quant
  a.name = "cuda";
  a.layout = {Layout::kNHWC, 0};
  a.channel_major_nchw = true;
  a.narrow_storage = {Precision::kFp16, Precision::kBf16};
  a.gpu_detect = true;
  return a;
}

}  // namespace yoloc::targets
