#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Removes nodes and values that no graph output depends on.
class DeadCodeElimination : public Pass {
 public:
  std::string name() const override { return "dead_code_elimination"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
