#pragma once
/// The GPU tests' driver context: the first device's primary context, made current, or nullptr
/// where there is no CUDA device or driver (the tests then skip, YOLOC_REQUIRE_GPU).
#include <cstdio>
#include <memory>

#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {

/// The context, printing the device once (name, arch, multiprocessors, shared memory, L2, NVRTC).
inline runtime::cuda::Context* context() {
  namespace rt = runtime::cuda;
  static std::unique_ptr<rt::Context> ctx = []() -> std::unique_ptr<rt::Context> {
    if (rt::device_count_or_zero() == 0) return nullptr;
    auto c = std::make_unique<rt::Context>(0);
    const rt::DeviceInfo& d = c->info();
    std::printf("[device] %s, %s, %d SMs, %d KiB shared/block opt-in, %d MiB L2, NVRTC %s\n",
                d.name.c_str(), d.arch().c_str(), d.multiprocessors,
                d.max_shared_per_block_optin / 1024, d.l2_bytes >> 20, nvrtc_version().c_str());
    return c;
  }();
  if (ctx) ctx->make_current();
  return ctx.get();
}

/// Kernel k's function in `module`, opted in to its dynamic shared memory above 48 KiB.
inline CUfunction kernel_function(const runtime::cuda::Module& module, const CudaKernel& k) {
  const CUfunction fn = module.function(k.symbol);
  if (k.shared_bytes > 48 * 1024)
    runtime::cuda::set_max_dynamic_shared(fn, static_cast<int>(k.shared_bytes));
  return fn;
}

}  // namespace yoloc::codegen::cuda::testing

/// The first statement of a GPU test: skips it where there is no CUDA device.
#define YOLOC_REQUIRE_GPU()                                                          \
  if (::yoloc::codegen::cuda::testing::context() == nullptr) {                       \
    GTEST_SKIP() << "no CUDA device (no libcuda.so.1, or no GPU): GPU test skipped"; \
  }
