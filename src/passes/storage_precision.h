#pragma once
#include "passes/pass.h"

namespace yoloc {

/// At fp16 / bf16 on target "cuda", the activations the channels-last kernels exchange (float32
/// values in layout NHWC that are neither graph inputs nor graph outputs) are stored as float16 /
/// bfloat16: the tensor-core convolutions read and write them, every kernel computes in float32
/// and rounds once on store. The detect tail (NCHW), graph inputs and outputs keep float32, and
/// constants stay float32 (the templates pack weights into the type they need). Runs last, so
/// the memory plan sizes the narrow buffers; it changes types only, no node.
class StoragePrecision : public Pass {
 public:
  std::string name() const override { return "storage_precision"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
