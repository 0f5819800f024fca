#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Marks Concat, Split, Slice and reshapes that can be views (attribute view=1): a producer then
/// writes straight into its slice of the concat buffer and a consumer reads its slice of a split,
/// so no copy kernel remains for them.
class Views : public Pass {
 public:
  std::string name() const override { return "views"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
