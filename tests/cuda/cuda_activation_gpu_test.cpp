// GPU test of the fast activations of the CUDA prelude (label gpu; it skips where there is no
// CUDA device or driver): yc_act_silu_fast (tanh.approx) and yc_act_sigmoid_fast (ex2, rcp) on
// the device, at a dense grid of inputs, against double-precision references.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {
namespace activation_gpu_test {

namespace rt = runtime::cuda;

const char* const kKernel = R"(
YC_KERNEL void fast_activations(const float* x, float* silu, float* sigmoid, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  silu[i] = yc_act_silu_fast(x[i]);
  sigmoid[i] = yc_act_sigmoid_fast(x[i]);
}
)";

TEST(CudaGpuActivation, FastSiluAndSigmoidAccuracy) {
  YOLOC_REQUIRE_GPU();
  rt::Context* ctx = context();
  NvrtcOptions opts;
  opts.arch = ctx->info().arch();
  const rt::Module module(nvrtc_compile(cuda_prelude() + kKernel, "fast_activations", opts).cubin);
  const CUfunction fn = module.function("fast_activations");

  // x in [-40, 20) every 2^-12: the range conv outputs reach, and past where SiLU is 0 or x.
  const int n = 60 * 4096;
  std::vector<float> x(n), silu(n), sigmoid(n);
  for (int i = 0; i < n; ++i) x[i] = -40.f + static_cast<float>(i) / 4096.f;
  rt::DeviceBuffer dx(n * 4), dsilu(n * 4), dsig(n * 4);
  dx.upload(x.data());
  CUdeviceptr px = dx.ptr(), ps = dsilu.ptr(), pg = dsig.ptr();
  int count = n;
  void* args[] = {&px, &ps, &pg, &count};
  rt::LaunchDims d;
  d.grid[0] = static_cast<unsigned>((n + 255) / 256);
  d.block[0] = 256;
  rt::launch(fn, d, args, nullptr);
  ctx->synchronize();
  dsilu.download(silu.data());
  dsig.download(sigmoid.data());

  // SiLU's values are rounded to 16 bits next: its error is held to 2^-11 of max(|silu|, 1),
  // fp16's rounding of values from 1 to 2 (measured on an H200: 9.8e-6, at x = -8.75). The
  // sigmoid's (class scores) to 2^-16 of the value (ex2.approx's few float32 ulps; 1.9e-6).
  double worst_silu = 0, worst_sigmoid = 0;
  float at_silu = 0, at_sigmoid = 0;
  for (int i = 0; i < n; ++i) {
    const double v = x[i], s = 1.0 / (1.0 + std::exp(-v));
    const double e_silu = std::fabs(silu[i] - v * s) / std::max(std::fabs(v * s), 1.0);
    const double e_sig = std::fabs(sigmoid[i] - s) / s;
    if (e_silu > worst_silu) worst_silu = e_silu, at_silu = x[i];
    if (e_sig > worst_sigmoid) worst_sigmoid = e_sig, at_sigmoid = x[i];
  }
  std::printf("[activation] SiLU worst %.3g of max(|silu|, 1) at x = %g; sigmoid worst %.3g at %g\n",
              worst_silu, at_silu, worst_sigmoid, at_sigmoid);
  EXPECT_LE(worst_silu, std::ldexp(1.0, -11)) << "at x = " << at_silu;
  EXPECT_LE(worst_sigmoid, std::ldexp(1.0, -16)) << "at x = " << at_sigmoid;
}

}  // namespace activation_gpu_test
}  // namespace yoloc::codegen::cuda::testing
