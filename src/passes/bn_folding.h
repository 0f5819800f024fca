#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Folds an inference BatchNormalization, and per-channel constant Mul/Add, into the weights and
/// bias of the convolution before it.
class BatchNormFolding : public Pass {
 public:
  std::string name() const override { return "bn_folding"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
