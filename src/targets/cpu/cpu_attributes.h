#pragma once
/// The CPU target's attributes (what the passes ask of it): NCHWc activations blocked by the
/// vector width, fp32 only, pre- and post-processing on the host.
#include <string>

#include "core/error.h"
#include "passes/target_attributes.h"

namespace yoloc::targets {

/// Of the CPU target ("cpu": what compile optimizes for, 16-float blocks) or of one of its ISAs
/// ("avx512", "avx2", "neon": the block of their vectors). Raises a UserError for another.
inline TargetAttributes cpu_attributes(const std::string& isa = "") {
  int width = 0;
  if (isa.empty() || isa == "avx512") width = 16;
  if (isa == "avx2") width = 8;
  if (isa == "neon") width = 4;
  if (width == 0) user_error("target cpu-{}: choose cpu, cpu-avx512, cpu-avx2 or cpu-neon", isa);
  TargetAttributes a;
  a.quantize_ops = false;  // no int8 kernels: quantize / dequantize run as float fake-quant
  a.name = isa.empty() ? "cpu" : "cpu-" + isa;
  a.layout = {Layout::kNCHWc, width};
  a.vector_width = width;
  return a;
}

}  // namespace yoloc::targets
