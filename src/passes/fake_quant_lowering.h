#pragma once
/// The quantized graph (quantize_graph) for a target without int8 kernels: its float kernels
/// run it with int8-rounded weights (each DequantizeLinear of a constant folded into the float
/// weights it stands for) and int8-rounded activations (each QuantizeLinear -> DequantizeLinear
/// pair becomes the elementwise fake-quant (clip(round(x / s) + zp, -128, 127) - zp) * s, which
/// the elementwise kernels run). Exact: the same float operations as the pair's references.
#include "passes/pass.h"

namespace yoloc {

class FakeQuantLowering : public Pass {
 public:
  std::string name() const override { return "fake_quant_lowering"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
