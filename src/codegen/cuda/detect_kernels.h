#pragma once
/// CUDA kernels of detection pre- and post-processing, compile side: the source of four kernels
/// for one (family, network input, head output, batch, max_det cap), and the spec the runtime
/// (artifact/cuda_program.h; runtime/cuda/gpu_detect.h launches them) launches them with.
///
///   pre     uint8 BGR frames (any size up to a capacity; geometry from YcImageParams in device
///           memory) -> network input, in any element strides and dtype (f32/f16/bf16): the
///           Ultralytics letterbox (OpenCV-exact bilinear with 11-bit fixed-point weights,
///           BGR->RGB, /255, centred grey 114) or the YOLOX paste (top-left, BGR, 0..255), with
///           the arithmetic of detect/preprocess.cpp, so f32 inputs equal the CPU's bit for bit.
///   decode  one thread per anchor/row of the head (f32/f16/bf16): the candidates whose score
///           passes conf (the rules of detect::decode_head) are appended, with a sort key
///           (score, then row: the CPU's stable order), to a per-image buffer (atomic counter).
///   rank    each candidate's rank in that order (counting), scattered into a sorted array of
///           the best detect::kMaxNmsCandidates.
///   nms     one block per image: class-wise greedy NMS over the sorted candidates in chunks
///           (IoU against the kept boxes in parallel, within a chunk a bit mask and a sequential
///           sweep), at most max_det kept: the result of detect::nms. v10 heads: the first
///           max_det. Resets the candidate counter for the next run.
/// Launch geometry is fixed (capturable in a graph); conf, iou and max_det are read from
/// YcDetectParams. Arithmetic that decides a result (resize weights, box corners, IoU) uses
/// round-to-nearest intrinsics, never contracted FMAs, so it rounds as the host's does.
#include <array>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "detect/family.h"
#include "artifact/cuda_program.h"

namespace yoloc::codegen::cuda {

/// Element strides of a network input (batch, channel, row, column).
using InputStrides = std::array<int64_t, 4>;
/// Dense NCHW / NHWC strides of a 3-channel w x h input.
InputStrides nchw_strides(int w, int h);
InputStrides nhwc_strides(int w, int h);

/// What the kernels are emitted for.
struct DetectKernelConfig {
  detect::Family family = detect::Family::kYoloV8;
  int input_w = 640;  ///< network input size
  int input_h = 640;
  DType input_dtype = DType::kFloat32;  ///< float32, float16, bfloat16
  InputStrides input_strides{};         ///< all zero: dense NCHW
  /// The head output (batch, d1, d2): v8 (B, 4+C, N); v5 / YOLOX (B, N, 5+C); v10 (B, K, 6).
  std::array<int64_t, 3> head_shape{};
  DType head_dtype = DType::kFloat32;  ///< float32, float16, bfloat16
  int max_det_cap = 300;               ///< detections per image the result holds (<= 1000)
  std::string prefix = "yc_detect";    ///< symbols are <prefix>_pre, _decode, _rank, _nms
};

/// The emitted module: one source (prelude included) holding the four kernels, and the spec.
struct DetectKernels {
  std::string source;
  artifact::cuda::GpuDetectSpec spec;
};

/// Emits the kernels. Raises a UserError when the head shape does not fit the family (naming
/// the expected layout), a dtype is not f32/f16/bf16, the batch of the head is not positive, a
/// YOLOX input is not a multiple of 32 or its rows are not the grid's, or max_det_cap is not in
/// [1, 1000].
DetectKernels emit_detect_kernels(const DetectKernelConfig& config);

/// The kernels' device functions without the kernels (the params structs, the rounding
/// helpers, the per-pixel pre-processing yc_preprocess_pixel, the per-row decoders
/// yc_decode_v8 / yc_decode_rows / yc_decode_v10, yc_yolox_cell, yc_iou, yc_sort_key), after
/// the prelude. A host test compiles it with host versions of the prelude's device part and of
/// the rounding helpers (YOLOC_DETECT_DEVICE_OPS) to check the arithmetic without a GPU.
std::string detect_device_functions();

}  // namespace yoloc::codegen::cuda
