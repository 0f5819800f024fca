#pragma once
/// What a target is to the graph passes: data they ask (the layout its kernels take, its vector
/// width, the precisions it computes in, ...), never its name. Each target fills it in
/// (src/targets/<kind>/); the passes read it from PassContext::target.
#include <algorithm>
#include <string>
#include <vector>

#include "ir/layout.h"

namespace yoloc {

/// Numeric precision a compile targets; passes that change numerics consult it. kAuto keeps the
/// model's own numerics (float models stay float, quantized ops stay quantized).
enum class Precision { kAuto, kFp32, kFp16, kBf16, kInt8 };

struct TargetAttributes {
  /// For messages and IR dumps only: a pass never compares it.
  std::string name = "reference";
  /// The layout its layout-sensitive kernels (conv, pool, resize) take activations in; NCHW (the
  /// default): as the model has them, and the layout pass changes nothing.
  LayoutSpec layout;
  /// Float lanes of its vector unit (a CPU's SIMD width: the NCHWc block); 0 where it does not
  /// apply.
  int vector_width = 0;
  /// Its NHWC activations that are read channel by channel are better stored NCHW
  /// (layout_selection's channel_major_values: a GPU's coalesced loads).
  bool channel_major_nchw = false;
  /// The narrow float types it computes an fp16 / bf16 compile in: the graph computes in
  /// float32 (float_compute) and storage_precision stores the values narrow where it pays.
  std::vector<Precision> narrow_storage;
  /// It runs a detector's pre- and post-processing itself (the GPU detection module).
  bool gpu_detect = false;
  /// It runs QuantizeLinear / DequantizeLinear as the graph has them (the reference executor);
  /// a kernel target without int8 kernels gets them lowered to float fake-quant.
  bool quantize_ops = true;

  /// Whether a compile at `p` stores values narrow (p is one of narrow_storage).
  bool stores_narrow(Precision p) const {
    return std::find(narrow_storage.begin(), narrow_storage.end(), p) != narrow_storage.end();
  }
};

}  // namespace yoloc
