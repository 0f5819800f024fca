#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Merges nodes with the same op, inputs and attributes, and constants with the same bytes.
class CommonSubexpressionElimination : public Pass {
 public:
  std::string name() const override { return "cse"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
