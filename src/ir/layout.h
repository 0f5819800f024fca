#pragma once
/// Memory layouts a target may store a 4-D activation in. The IR's shapes stay logical (NCHW);
/// the layout says how a backend lays the data out, chosen by the layout_selection pass.
#include <string>

namespace yoloc {

enum class Layout {
  kNCHW,    ///< row-major as the shape reads (the default, and the only one of graph edges)
  kNHWC,    ///< channels last (tensor-core convolutions)
  kNCHWc,   ///< blocked channels: N, C/b, H, W, b (SIMD convolutions on CPUs)
};

struct LayoutSpec {
  Layout layout = Layout::kNCHW;
  int block = 0;  ///< b of NCHWc

  bool operator==(const LayoutSpec& o) const { return layout == o.layout && block == o.block; }
  bool operator!=(const LayoutSpec& o) const { return !(*this == o); }
  /// "NCHW", "NHWC", "NCHW16c".
  std::string str() const {
    switch (layout) {
      case Layout::kNCHW: return "NCHW";
      case Layout::kNHWC: return "NHWC";
      case Layout::kNCHWc: return "NCHW" + std::to_string(block) + "c";
    }
    return "NCHW";
  }
};

}  // namespace yoloc
