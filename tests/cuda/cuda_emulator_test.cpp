// The host emulation itself: barriers order the threads of a block both ways, and a barrier that
// some threads never reach is reported as a deadlock instead of hanging the test.
#include <gtest/gtest.h>

#include <numeric>

#include "cuda_emulator.h"

namespace yoloc::codegen::cuda::testing {
namespace {

CudaKernel kernel(const std::string& symbol, const std::string& source, unsigned threads,
                  unsigned shared_bytes) {
  CudaKernel k;
  k.symbol = symbol;
  k.source = source;
  k.block = {threads, 1, 1};
  k.grid = {2, 1, 1};
  k.shared_bytes = shared_bytes;
  return k;
}

TEST(CudaEmulator, BarrierOrdersWritesBeforeReadsOfEveryThread) {
  // Each thread writes its slot, waits, then reads its mirror's slot (written by a thread that
  // runs after it in one scheduling order and before it in the other); twice, so that the
  // second round's writes must wait for the first round's reads.
  const CudaKernel k = kernel("mirror", R"(
YC_KERNEL void mirror(float* y) {
  YC_DYNAMIC_SMEM(float, s);
  const unsigned t = threadIdx.x, n = 128;
  s[t] = static_cast<float>(t + 1000 * blockIdx.x);
  YC_SYNC();
  float a = s[n - 1 - t];
  YC_SYNC();
  s[t] = a * 2.f;
  YC_SYNC();
  y[blockIdx.x * n + t] = s[n - 1 - t];
}
)",
                              128, 128 * 4);
  const EmulatedKernels emu({k});
  std::vector<float> y(256, -1.f);
  ASSERT_EQ(emu.launch(k, {{y.data(), y.size() * 4}}), "");
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned t = 0; t < 128; ++t) {
      EXPECT_EQ(y[b * 128 + t], 2.f * static_cast<float>(t + 1000 * b)) << b << " " << t;
    }
  }
}

TEST(CudaEmulator, BarrierSomeThreadsNeverReachIsADeadlock) {
  const CudaKernel k = kernel("half_sync", R"(
YC_KERNEL void half_sync(float* y) {
  if (threadIdx.x < 32) YC_SYNC();
  y[blockIdx.x * 64 + threadIdx.x] = 1.f;
}
)",
                              64, 0);
  const EmulatedKernels emu({k});
  std::vector<float> y(128, 0.f);
  const std::string err = emu.launch(k, {{y.data(), y.size() * 4}});
  EXPECT_NE(err.find("deadlock: 32 threads wait at a barrier"), std::string::npos) << err;
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
