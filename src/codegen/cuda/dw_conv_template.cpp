#include "codegen/cuda/dw_conv_template.h"

#include <algorithm>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kDwWeightRow = 8;       // CP: channels of a packed weight row, a multiple of this
constexpr int64_t kDwMaxRegisters = 96;   // VEC * (PX + KW + 1) fp32 values per thread
constexpr int64_t kDwMaxExtent = 16;      // window extent (KH - 1) * DH + 1, and the same for KW
constexpr int64_t kDwTargetBlocks = 264;  // two per multiprocessor of an H100 / H200

int64_t dw_pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Threads of the task with `vec` channels and `px` pixels each.
int64_t dw_items(const ConvTask& t, int64_t vec, int64_t px) {
  return t.n * t.oh * cpu::ceil_div(t.ow, px) * cpu::ceil_div(t.c, vec);
}

// The kernel after the common declarations of conv_common_source (in the same namespace). See the
// header for the scheme.
constexpr const char* kDwKernel = cuh::dw_conv;

}  // namespace

bool DwConvTemplate::matches(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 1 && t.h > 0 && t.w > 0 && t.oh > 0 && t.ow > 0 && t.kh > 0 &&
                     t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 && t.ph >= 0 &&
                     t.pw >= 0;
  if (!sizes || t.groups != t.c || t.k != t.c || task.in_nchw || task.b2b) return false;
  const auto storable = [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
  };
  const bool window =
      (t.kh - 1) * t.dh + 1 <= kDwMaxExtent && (t.kw - 1) * t.dw + 1 <= kDwMaxExtent;
  // Pixel indices are 32-bit in the kernel, and so is the grid of one-dimensional blocks.
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) &&
                    t.n * t.h * t.w < (int64_t{1} << 31) && dw_items(t, 1, 1) < (int64_t{1} << 31);
  return storable(task.dtype) && storable(task.out_dtype) && window && task.slices_valid() && fits;
}

ScheduleSpace DwConvTemplate::space(const CudaConvTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"vec", "channels per thread", {1, 2, 4, 8}});
  s.knobs.push_back({"px", "output pixels of a row per thread", {1, 2, 4, 8}});
  s.knobs.push_back({"threads", "threads per block", {64, 128, 256, 512}});
  return s;
}

bool DwConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const int64_t vec = cfg.get("vec"), px = cfg.get("px");
  return vec * (px + t.conv.kw + 1) <= kDwMaxRegisters && vec <= dw_pow2_ceil(t.conv.c);
}

ScheduleConfig DwConvTemplate::default_config(const CudaConvTask& task) {
  YOLOC_CHECK(matches(task), "depthwise conv template does not match {}", task.key());
  const ConvTask& t = task.conv;
  int64_t vec = task.dtype == DType::kFloat32 ? 4 : 8;
  while (vec > 1 && (t.c % vec != 0 || task.in.stride % vec != 0 || task.in.offset % vec != 0))
    vec /= 2;
  int64_t px = t.sw == 1 ? 2 : 1;
  int64_t threads = 128;
  const auto blocks = [&] { return cpu::ceil_div(dw_items(t, vec, px), threads); };
  while (blocks() < kDwTargetBlocks && px > 1) px /= 2;
  while (blocks() < kDwTargetBlocks && threads > 64) threads /= 2;
  ScheduleConfig cfg({{"vec", vec}, {"px", px}, {"threads", threads}});
  while (!valid(task, cfg) && cfg.get("vec") > 1) cfg.set("vec", cfg.get("vec") / 2);
  YOLOC_CHECK(valid(task, cfg), "default depthwise conv config {} invalid for {}", cfg.str(),
              task.key());
  return cfg;
}

CudaKernel DwConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "depthwise conv config {} invalid for {}", cfg.str(), t.key());
  const int64_t vec = cfg.get("vec"), px = cfg.get("px"), threads = cfg.get("threads");
  CudaKernel k = conv_kernel(t, symbol, "dw ", cfg.str(), kDwKernel,
                             {{"@VEC@", std::to_string(vec)},
                              {"@PX@", std::to_string(px)},
                              {"@THREADS@", std::to_string(threads)}});
  k.grid = {static_cast<unsigned>(cpu::ceil_div(dw_items(t.conv, vec, px), threads)), 1, 1};
  k.block = {static_cast<unsigned>(threads), 1, 1};
  k.shared_bytes = 0;
  return k;
}

Tensor DwConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  return tap_major_weights(task.conv, oihw, kDwWeightRow);
}

}  // namespace yoloc::codegen::cuda
