#include "codegen/cuda/dw_conv_template.h"

#include <algorithm>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
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
constexpr const char* kDwKernel = R"(enum : int {
  VEC = @VEC@, PX = @PX@, THREADS = @THREADS@,
  CV = (C + VEC - 1) / VEC,   // channel vectors of a pixel
  OWT = (OW + PX - 1) / PX,   // column groups of an output row
  SPAN = (PX - 1) * SW + (KW - 1) * DW + 1,  // input columns of a window row the PX windows read
  CP = (C + 7) / 8 * 8,       // channels of a packed weight row
  // Input pieces of up to 16 bytes where the slice keeps them aligned; element loads otherwise.
  CHI = 16 / static_cast<int>(sizeof(InT)) < VEC ? 16 / static_cast<int>(sizeof(InT)) : VEC,
  VEC_IN = C % VEC == 0 && IS % CHI == 0 && IO % CHI == 0,
  VEC_W = VEC % 4 == 0  // a thread's weights of a tap as float4s
};
enum : yc_i64 { ITEMS = static_cast<yc_i64>(N) * OH * OWT * CV };

// Channels c0 .. c0 + VEC - 1 of the input pixel at element `at` (zeros past C).
YC_DEVICE void load_pixel(const InT* __restrict__ x, yc_i64 at, int c0, float (&v)[VEC]) {
  if constexpr (VEC_IN) {
#pragma unroll
    for (int i = 0; i < VEC; i += CHI) {
      const yc_vec<InT, CHI> p = *reinterpret_cast<const yc_vec<InT, CHI>*>(x + at + i);
#pragma unroll
      for (int e = 0; e < CHI; ++e) v[i + e] = yc_to_float(p.e[e]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] = c0 + e < C ? yc_load(x + at + e) : 0.f;
  }
}
}  // namespace @SYM@_ns

YC_KERNEL void YC_LAUNCH_BOUNDS(@SYM@_ns::THREADS)
    @SYM@(const void* x_, const void* w_, const float* __restrict__ bias, const void* res_,
          void* y_, void* up_) {
  YC_KERNEL_ENTRY();
  using namespace @SYM@_ns;
  const InT* __restrict__ x = static_cast<const InT*>(x_);
  const float* __restrict__ w = static_cast<const float*>(w_);
  const OutT* res = static_cast<const OutT*>(res_);
  OutT* y = static_cast<OutT*>(y_);
  OutT* up = static_cast<OutT*>(up_);
  const yc_i64 item = static_cast<yc_i64>(blockIdx.x) * THREADS + threadIdx.x;
  if (item >= ITEMS) return;
  // Consecutive threads: consecutive channel vectors of one pixel group.
  const int cv = static_cast<int>(item % CV);
  yc_i64 rest = item / CV;
  const int owt = static_cast<int>(rest % OWT);
  rest /= OWT;
  const int oh = static_cast<int>(rest % OH), img = static_cast<int>(rest / OH);
  const int c0 = cv * VEC, ow0 = owt * PX;
  const yc_i64 image = static_cast<yc_i64>(img) * H * W * IS + IO + c0;

  float acc[PX][VEC];
#pragma unroll
  for (int p = 0; p < PX; ++p)
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[p][e] = 0.f;

#pragma unroll
  for (int r = 0; r < KH; ++r) {
    const int ih = oh * SH - PH + r * DH;
    if (static_cast<unsigned>(ih) >= static_cast<unsigned>(H)) continue;
    float wr[KW][VEC];
#pragma unroll
    for (int s = 0; s < KW; ++s) {
      const float* ws = w + (r * KW + s) * CP + c0;
      if constexpr (VEC_W) {
#pragma unroll
        for (int e = 0; e < VEC; e += 4) {
          const yc_vec<float, 4> q = *reinterpret_cast<const yc_vec<float, 4>*>(ws + e);
#pragma unroll
          for (int i = 0; i < 4; ++i) wr[s][e + i] = q.e[i];
        }
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) wr[s][e] = ws[e];
      }
    }
    const yc_i64 row = image + static_cast<yc_i64>(ih) * W * IS;
#pragma unroll
    for (int j = 0; j < SPAN; ++j) {
      const int iw = ow0 * SW - PW + j;
      if (static_cast<unsigned>(iw) >= static_cast<unsigned>(W)) continue;
      float v[VEC];
      load_pixel(x, row + static_cast<yc_i64>(iw) * IS, c0, v);
      // Input column j is tap s of output pixel p where p * SW + s * DW == j.
#pragma unroll
      for (int p = 0; p < PX; ++p)
#pragma unroll
        for (int s = 0; s < KW; ++s)
          if (p * SW + s * DW == j) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[p][e] = fmaf(v[e], wr[s][e], acc[p][e]);
          }
    }
  }
#pragma unroll
  for (int p = 0; p < PX; ++p) {
    if (ow0 + p >= OW) break;
    const int m = (img * OH + oh) * OW + ow0 + p;
    epilogue_vec<VEC>(y, up, res, bias, m, c0, acc[p]);
  }
}
)";

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
