#pragma once
#include "passes/pass.h"

namespace yoloc {

/// At fp16 / bf16 on a target that stores them narrow (TargetAttributes::narrow_storage: CUDA),
/// the activations the conv kernels exchange (float32 values in
/// layout NHWC, conv outputs, and the NCHW region that layout_selection gives the detect head's
/// last convs: followers and views of those; never graph inputs or outputs) are stored as
/// float16 / bfloat16: the tensor-core convolutions read and write them, every kernel computes in
/// float32 and rounds once on store. Values sharing a buffer through views get one type: float32
/// for all when one of them must keep it. The detect tail's own values (NCHW), graph inputs and
/// outputs keep float32 (with ctx.narrow_io those are narrow too: the inputs, the outputs and the
/// values whose views assemble an output), and constants stay float32 (the templates pack weights
/// into the type they need). Runs last, so the memory plan sizes the narrow buffers; it changes
/// types only, no node.
class StoragePrecision : public Pass {
 public:
  std::string name() const override { return "storage_precision"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
