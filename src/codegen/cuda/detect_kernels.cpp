#include "codegen/cuda/detect_kernels.h"

#include <fmt/format.h>

#include "artifact/cuda_detect_params.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"
#include "detect/nms.h"

namespace yoloc::codegen::cuda {

namespace rt = artifact::cuda;

namespace {

constexpr unsigned kThreads = 256;  // every kernel's block; the NMS chunk
constexpr int kMaxDetCap = 1000;    // the NMS kernel keeps max_det boxes in shared memory

// Arithmetic helpers whose rounding must be the host's: round-to-nearest intrinsics are never
// contracted into FMAs (nvcc and NVRTC contract a * b + c by default).
constexpr const char* kDeviceOps = cuh::detect_device_ops;

// The per-element arithmetic, mirroring src/detect (preprocess.cpp, decode.cpp) operation by
// operation.
constexpr const char* kDeviceFunctions = cuh::detect_device_functions;

// The kernels of one configuration, in namespace {prefix}. {{ }} are literal braces.
constexpr const char* kKernels = cuh::detect_kernels;

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void check_dtype(DType t, const char* what) {
  if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16)
    user_error(
        "GPU detection kernels: the {} has element type {}; expected float32, float16 or "
        "bfloat16",
        what, dtype_name(t));
}

[[noreturn]] void bad_head(const DetectKernelConfig& c, const char* expected) {
  user_error(
      "the {} head expects an output of shape {}, but the model's output is ({}, {}, {}); "
      "if the family is wrong, pass --family yolov5|yolov8|yolov10|yolox",
      detect::family_name(c.family), expected, c.head_shape[0], c.head_shape[1], c.head_shape[2]);
}

int family_code(detect::Family f) {
  switch (f) {
    case detect::Family::kYoloV5: return 0;
    case detect::Family::kYoloV8: return 1;
    case detect::Family::kYoloV10: return 2;
    case detect::Family::kYoloX: return 3;
  }
  internal_error("bad Family {}", static_cast<int>(f));
}

}  // namespace

InputStrides nchw_strides(int w, int h) {
  const int64_t plane = static_cast<int64_t>(w) * h;
  return {3 * plane, plane, w, 1};
}

InputStrides nhwc_strides(int w, int h) {
  return {3 * static_cast<int64_t>(w) * h, 1, 3 * static_cast<int64_t>(w), 3};
}

std::string detect_device_functions() {
  return std::string("#ifndef YOLOC_DETECT_COMMON\n#define YOLOC_DETECT_COMMON\n") +
         rt::kDetectParamsSource + "\n" + kDeviceOps + kDeviceFunctions +
         "#endif  // YOLOC_DETECT_COMMON\n";
}

DetectKernels emit_detect_kernels(const DetectKernelConfig& c) {
  if (c.input_w <= 0 || c.input_h <= 0)
    user_error("GPU detection kernels: the input size {}x{} must be positive", c.input_w,
               c.input_h);
  check_dtype(c.input_dtype, "network input");
  check_dtype(c.head_dtype, "head output");
  if (c.max_det_cap < 1 || c.max_det_cap > kMaxDetCap)
    user_error("GPU detection kernels: max_det {} must be in [1, {}]", c.max_det_cap, kMaxDetCap);
  const int64_t batch = c.head_shape[0], d1 = c.head_shape[1], d2 = c.head_shape[2];
  if (batch < 1 || batch > 65535 || d1 < 1 || d2 < 1 || d1 * d2 > (int64_t{1} << 31))
    user_error(
        "GPU detection kernels: the head output ({}, {}, {}) must have a batch in "
        "[1, 65535] and positive dims",
        batch, d1, d2);
  int64_t rows = 0;
  switch (c.family) {
    case detect::Family::kYoloV8:
      if (d1 < 5) bad_head(c, "(B, 4+C, N)");
      rows = d2;
      break;
    case detect::Family::kYoloV5:
      if (d2 < 6) bad_head(c, "(B, N, 5+C)");
      rows = d1;
      break;
    case detect::Family::kYoloX: {
      if (d2 < 6) bad_head(c, "(B, N, 5+C)");
      if (c.input_w % 32 != 0 || c.input_h % 32 != 0)
        user_error("YOLOX decoding: the input size {}x{} must be a multiple of 32", c.input_w,
                   c.input_h);
      int64_t cells = 0;
      for (int s : {8, 16, 32}) cells += static_cast<int64_t>(c.input_w / s) * (c.input_h / s);
      if (cells != d1)
        user_error(
            "YOLOX decoding: an input of {}x{} has {} grid cells at strides 8/16/32, but "
            "the head output has {} rows; is this a raw YOLOX head (no in-graph decoding)?",
            c.input_w, c.input_h, cells, d1);
      rows = d1;
      break;
    }
    case detect::Family::kYoloV10:
      if (d2 != 6) bad_head(c, "(B, K, 6)");
      rows = d1;
      break;
  }
  const InputStrides st =
      c.input_strides == InputStrides{} ? nchw_strides(c.input_w, c.input_h) : c.input_strides;
  const int64_t cap = rows;
  const int64_t scap = std::min<int64_t>(cap, detect::kMaxNmsCandidates);
  // Workspace: u32 counters, u64 keys[B][CAP], YcDetection cands[B][CAP], sorted[B][SCAP].
  const int64_t ws_keys = round_up(4 * batch, 256);
  const int64_t ws_cands = round_up(ws_keys + 8 * batch * cap, 256);
  const int64_t ws_sorted =
      round_up(ws_cands + static_cast<int64_t>(sizeof(rt::YcDetection)) * batch * cap, 256);
  const int64_t ws_bytes = ws_sorted + static_cast<int64_t>(sizeof(rt::YcDetection)) * batch * scap;
  const int64_t res_dets = round_up(4 * batch, 16);

  DetectKernels k;
  const std::string& p = c.prefix;
  k.source =
      cuda_prelude() + detect_device_functions() +
      fmt::format(fmt::runtime(kKernels), fmt::arg("prefix", p),
                  fmt::arg("in_t", cuda_storage_type(c.input_dtype)),
                  fmt::arg("head_t", cuda_storage_type(c.head_dtype)), fmt::arg("w", c.input_w),
                  fmt::arg("h", c.input_h), fmt::arg("batch", batch), fmt::arg("threads", kThreads),
                  fmt::arg("family", family_code(c.family)),
                  fmt::arg("to_rgb", c.family == detect::Family::kYoloX ? 0 : 1),
                  fmt::arg("d1", d1), fmt::arg("d2", d2), fmt::arg("rows", rows),
                  fmt::arg("cap", cap), fmt::arg("scap", scap),
                  fmt::arg("max_det_cap", c.max_det_cap), fmt::arg("sb", st[0]),
                  fmt::arg("sc", st[1]), fmt::arg("sy", st[2]), fmt::arg("sx", st[3]),
                  fmt::arg("ws_keys", ws_keys), fmt::arg("ws_cands", ws_cands),
                  fmt::arg("ws_sorted", ws_sorted), fmt::arg("res_dets", res_dets));

  rt::GpuDetectSpec& s = k.spec;
  s.family = c.family;
  s.input_w = c.input_w;
  s.input_h = c.input_h;
  s.batch = static_cast<int>(batch);
  s.max_det_cap = c.max_det_cap;
  s.workspace_bytes = static_cast<size_t>(ws_bytes);
  s.result_dets_offset = static_cast<size_t>(res_dets);
  s.result_bytes = static_cast<size_t>(res_dets) + sizeof(rt::YcDetection) * batch * c.max_det_cap;
  const auto b = static_cast<unsigned>(batch);
  const std::array<unsigned, 3> block{kThreads, 1, 1};
  s.pre = {p + "_pre", {{blocks(static_cast<int64_t>(c.input_w) * c.input_h), b, 1}, block, 0}};
  s.decode = {p + "_decode", {{blocks(rows), b, 1}, block, 0}};
  s.rank = {p + "_rank", {{blocks(cap), b, 1}, block, 0}};
  s.nms = {p + "_nms", {{b, 1, 1}, block, 0}};
  return k;
}

}  // namespace yoloc::codegen::cuda
