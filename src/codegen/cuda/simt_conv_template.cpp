#include "codegen/cuda/simt_conv_template.h"

#include <algorithm>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxStaticShared = 48 * 1024;  // no opt-in needed below this
constexpr int64_t kTargetBlocks = 128;

int64_t shared_bytes(int64_t bm, int64_t bn, int64_t bk) { return (bk * (bm + 4) + bk * bn) * 4; }

// The kernel after the common declarations of conv_common_source (in the same namespace).
constexpr const char* kSimtKernel = cuh::simt_conv;

}  // namespace

bool SimtConvTemplate::matches(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  const bool out_ok = task.out_dtype == DType::kFloat32 || task.out_dtype == DType::kFloat16 ||
                      task.out_dtype == DType::kBFloat16;
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) &&
                    t.kh * t.kw * t.c < (int64_t{1} << 30) && t.n * t.h * t.w < (int64_t{1} << 31);
  return sizes && t.groups == 1 && task.dtype == DType::kFloat32 && out_ok && task.slices_valid() &&
         fits && !task.in_nchw;
}

ScheduleSpace SimtConvTemplate::space(const CudaConvTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"bm", "output pixels per block tile", {32, 64, 128}});
  s.knobs.push_back({"bn", "output channels per block tile", {16, 32, 64, 128}});
  s.knobs.push_back({"bk", "GEMM depth per shared-memory step", {8, 16, 32}});
  s.knobs.push_back({"tm", "output pixels per thread", {1, 2, 4, 8}});
  s.knobs.push_back({"tn", "output channels per thread", {1, 2, 4, 8}});
  return s;
}

bool SimtConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t tm = cfg.get("tm"), tn = cfg.get("tn");
  if (bm % tm != 0 || bn % tn != 0) return false;
  const int64_t threads = (bm / tm) * (bn / tn);
  return threads >= 64 && threads <= 512 && threads % 32 == 0 &&
         shared_bytes(bm, bn, bk) <= kMaxStaticShared;
}

ScheduleConfig SimtConvTemplate::default_config(const CudaConvTask& t) {
  YOLOC_CHECK(matches(t), "SIMT conv template does not match {}", t.key());
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow, k = t.conv.k;
  const int64_t bn = k <= 16 ? 16 : k <= 32 ? 32 : 64;
  // 16 threads across the channels, 4 pixels each; half the pixels when the grid is small.
  const int64_t blocks64 = cpu::ceil_div(m, 64) * cpu::ceil_div(k, bn);
  const int64_t bm = blocks64 < kTargetBlocks ? 32 : 64;
  ScheduleConfig cfg({{"bm", bm}, {"bn", bn}, {"bk", 16}, {"tm", 4}, {"tn", bn / 16}});
  YOLOC_CHECK(valid(t, cfg), "default SIMT conv config {} invalid for {}", cfg.str(), t.key());
  return cfg;
}

CudaKernel SimtConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                  const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "SIMT conv config {} invalid for {}", cfg.str(), t.key());
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t tm = cfg.get("tm"), tn = cfg.get("tn");
  CudaKernel k = conv_kernel(t, symbol, "", cfg.str(), kSimtKernel,
                             {{"@BM@", std::to_string(bm)},
                              {"@BN@", std::to_string(bn)},
                              {"@BK@", std::to_string(bk)},
                              {"@TM@", std::to_string(tm)},
                              {"@TN@", std::to_string(tn)}});
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow;
  k.grid = {static_cast<unsigned>(cpu::ceil_div(m, bm)),
            static_cast<unsigned>(cpu::ceil_div(t.conv.k, bn)), 1};
  k.block = {static_cast<unsigned>((bm / tm) * (bn / tn)), 1, 1};
  k.shared_bytes = static_cast<unsigned>(shared_bytes(bm, bn, bk));
  return k;
}

Tensor SimtConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  const ConvTask& t = task.conv;
  const int64_t depth = t.kh * t.kw * t.c;
  Tensor packed(DType::kFloat32, {depth, t.k});
  float* p = packed.data<float>();
  for (int64_t n = 0; n < t.k; ++n)
    for (int64_t r = 0; r < t.kh; ++r)
      for (int64_t s = 0; s < t.kw; ++s)
        for (int64_t c = 0; c < t.c; ++c)
          p[((r * t.kw + s) * t.c + c) * t.k + n] = oihw[((n * t.c + c) * t.kh + r) * t.kw + s];
  return packed;
}

}  // namespace yoloc::codegen::cuda
