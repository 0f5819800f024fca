#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Removes identities (Identity, same-shape Reshape, identity Transpose, same-type Cast, x*1,
/// x+0, x-0, x/1) and turns division by a float constant into multiplication by its reciprocal.
class AlgebraicSimplify : public Pass {
 public:
  std::string name() const override { return "algebraic_simplify"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
