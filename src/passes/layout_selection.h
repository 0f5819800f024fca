#pragma once
#include "passes/pass.h"

namespace yoloc {

/// Whether n's output takes the layout of its operands when they agree: elementwise ops, the
/// quantization of activations, Concat / Split along channels.
bool follows_operand_layout(const Node& n);

/// Chooses the layout of every 4-D activation (Value::layout) for ctx.target: layout-sensitive
/// anchors (conv, pool, resize) work in the target's layout (TargetAttributes::layout), elementwise ops and
/// channel concats/splits follow their inputs, and everything else (reshapes, transposes, the
/// detect tail, graph outputs) reads NCHW. Conversions are thus left only at the edges between
/// the two regions, where the kernel on either side does them in its loads or stores.
///
/// On a target with channel_major_nchw (CUDA) the conv side of such an edge may do the
/// conversion instead: the NHWC values that
/// dense convs write and only readers of NCHW read (the detect head's last convs, and followers
/// between them and those readers) are stored NCHW when the readers' kernels then read them with
/// fewer memory sectors (YOLOv8 / 10 / 11 tails, which walk the anchors; not YOLOv5 / YOLOX, which
/// walk the channels). See the comment in layout_selection.cpp.
class LayoutSelection : public Pass {
 public:
  std::string name() const override { return "layout_selection"; }
  bool run(Graph& g, PassContext& ctx) override;
};

/// The (value, consumer) edges where the layout changes, plus graph outputs not in NCHW: the
/// conversions a backend performs.
size_t count_layout_conversions(const Graph& g);

}  // namespace yoloc
