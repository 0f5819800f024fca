#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Handles dynamically quantized convolutions (DynamicQuantizeLinear + ConvInteger + Cast +
/// Mul [+ Add]): kept as int8 ops at int8 / auto precision, rewritten to float convolutions with
/// dequantized weights at fp32 / fp16 / bf16 precision.
class Quantization : public Pass {
 public:
  std::string name() const override { return "quantization"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
