#pragma once
#include "passes/pass.h"

namespace yoloc {

/// The activation layout a target's kernels prefer: NCHW16c for AVX-512 CPUs ("cpu"), NCHW8c for
/// AVX2 ("cpu-avx2"), NCHW4c for NEON ("cpu-neon"), NHWC for CUDA tensor cores ("cuda"), NCHW
/// elsewhere (the reference executor, OpenCL).
LayoutSpec preferred_layout(const std::string& target);

/// Chooses the layout of every 4-D activation (Value::layout) for ctx.target: layout-sensitive
/// anchors (conv, pool, resize) work in the target's preferred layout, elementwise ops and
/// channel concats/splits follow their inputs, and everything else (reshapes, transposes, the
/// detect tail, graph outputs) reads NCHW. Conversions are thus left only at the edges between
/// the two regions, where the kernel on either side does them in its loads or stores.
class LayoutSelection : public Pass {
 public:
  std::string name() const override { return "layout_selection"; }
  bool run(Graph& g, PassContext& ctx) override;
};

/// The (value, consumer) edges where the layout changes, plus graph outputs not in NCHW: the
/// conversions a backend performs.
size_t count_layout_conversions(const Graph& g);

}  // namespace yoloc
