#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Combines convolutions that read the same input with the same geometry into one convolution
/// with concatenated weights, followed by a Split (a view) - TVM's CombineParallelConv2D.
class CombineParallelConv : public Pass {
 public:
  std::string name() const override { return "combine_parallel_conv"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
