#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Folds a space-to-depth "Focus" stem into the convolution that reads it (YOLOX, YOLOv5 before
/// v6.0): four stride-2 Slices of x at the pixel phases (dy, dx) in {0, 1}^2, concatenated on
/// channels, then a KH x KW stride-1 Conv, is the same as one 2KH x 2KW stride-2 Conv of x with
/// the weights moved: W'[k, c, 2r + dy, 2s + dx] = W[k, phase * C + c, r, s], pads doubled.
/// (Ultralytics made the same change in YOLOv5 v6.0.) The weights are only permuted, so the
/// result differs from the original by the order of the sums alone; the slices, the concat and
/// the 4C-channel intermediate disappear, and the stem becomes the 3-channel conv the direct
/// conv kernels are made for.
class SpaceToDepthConv : public Pass {
 public:
  std::string name() const override { return "space_to_depth_conv"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
