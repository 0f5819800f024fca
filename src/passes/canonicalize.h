#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Rewrites common decompositions into single ops: x*Sigmoid(x) -> SiLU, x*HardSigmoid(x)
/// -> HardSwish, Clip(x, 0, none) -> Relu, Pow(x, 2) -> x*x.
class Canonicalize : public Pass {
 public:
  std::string name() const override { return "canonicalize"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
