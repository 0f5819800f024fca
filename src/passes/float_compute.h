#pragma once
#include "passes/pass.h"

namespace yoloc {

/// At fp32 precision, makes a float16 graph compute in float32: float16 constants (and inferred
/// values, and ConstantOfShape fills) become float32, every float16 intermediate value becomes
/// float32, and Casts to float16 inside the graph become Casts to float32 (algebraic
/// simplification then removes the ones that became identities). The graph's float16 inputs and
/// outputs keep their type through one Cast at each edge: float16 -> float32 right after an
/// input, float32 -> float16 right before an output. It runs at fp16 / bf16 too on a target that
/// stores those narrow (TargetAttributes::narrow_storage: storage_precision then narrows what
/// the kernels store); other precisions and targets keep the model's numerics.
class FloatCompute : public Pass {
 public:
  std::string name() const override { return "float_compute"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
