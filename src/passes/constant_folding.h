#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Evaluates nodes whose inputs are all constants (or whose outputs shape inference already knows,
/// such as shape sub-graphs) and replaces their outputs with constants.
class ConstantFolding : public Pass {
 public:
  std::string name() const override { return "constant_folding"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
