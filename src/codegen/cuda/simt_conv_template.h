#pragma once
/// The fp32 SIMT conv template: the exact path of the fused group "Conv (+bias) (+ReLU/SiLU)
/// (+residual Add)" on CUDA cores, for fp32 NHWC activations (output fp32, or cast to fp16 / bf16),
/// any channel counts, written into any channel slice of its output buffer, NHWC or NCHW
/// (CudaConvTask::out_nchw: consecutive threads then take consecutive pixels).
///
/// The same implicit GEMM as the tensor-core template (M = N*OH*OW pixels, K output channels,
/// depth KG = KH*KW*C in (kh, kw, c) order) with plain FMAs: a block computes a BM x BN tile, each
/// thread a TM x TN sub-tile in registers, over depth steps of BK staged in shared memory (A
/// stored depth-major so a thread's TM pixels are consecutive).
///
/// Weights: what pack_weights makes, float32 [KG][K]: the depth-major transpose, so a block's
/// BN output channels of one depth row are contiguous.
#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "yoloc/tensor.h"

namespace yoloc::codegen::cuda {

class SimtConvTemplate {
 public:
  /// True for groups == 1, fp32 activations, output fp32, fp16 or bf16, slices that hold their
  /// tensors, and fewer than 2^31 output pixels.
  static bool matches(const CudaConvTask& t);
  /// Knobs: "bm", "bn" (block tile of pixels x channels), "bk" (depth per shared-memory step),
  /// "tm", "tn" (thread tile).
  static ScheduleSpace space(const CudaConvTask& t);
  /// True when cfg is a point of space(t) with tm | bm, tn | bn, 64 to 512 threads (a multiple of
  /// 32) and at most 48 KiB of shared memory.
  static bool valid(const CudaConvTask& t, const ScheduleConfig& cfg);
  /// A heuristic config, valid for every matching task.
  static ScheduleConfig default_config(const CudaConvTask& t);
  /// The kernel; `symbol` names it (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
  /// OIHW float32 weights (K*C*KH*KW values) in the kernel's layout.
  static Tensor pack_weights(const CudaConvTask& t, const float* oihw);
};

}  // namespace yoloc::codegen::cuda
