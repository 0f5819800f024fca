#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Partitions the graph into fused groups, one kernel each: anchor + epilogue, elementwise
/// chains, the SPPF block, the detect-head tail; views need no kernel.
class Fusion : public Pass {
 public:
  std::string name() const override { return "fusion"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
