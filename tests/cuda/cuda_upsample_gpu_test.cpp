// GPU tests of the upsample template (label gpu; they skip where there is no CUDA device or
// driver): yolov8n's two neck upsamplings at batch 128 (2x, out of and into concat slices), fp16,
// every config, against a host copy by the same rule (output pixel (oh, ow) is input pixel
// (oh / 2, ow / 2)), the bytes outside the output slice untouched; with a timing line per config.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "codegen/cuda/upsample_template.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;

struct Shape4 {
  int64_t n, c, h, w;
  ChannelSlice in, out;
};

void run_case(const Shape4& s) {
  UpsampleTask t;
  t.dtype = DType::kFloat16;
  t.n = s.n, t.c = s.c, t.h = s.h, t.w = s.w;
  t.sh = t.sw = 2;
  t.in = s.in;
  t.out = s.out;
  ASSERT_TRUE(UpsampleTemplate::matches(t)) << t.key();
  const int64_t oh = 2 * s.h, ow = 2 * s.w;
  // Distinct finite halves: the low 10 bits and a fixed exponent (values in [1, 2)).
  std::vector<uint16_t> x(static_cast<size_t>(s.n * s.h * s.w * s.in.stride));
  std::mt19937 rng(5);
  for (uint16_t& v : x) v = static_cast<uint16_t>(0x3c00 | (rng() & 0x3ff));
  std::vector<uint16_t> want(static_cast<size_t>(s.n * oh * ow * s.out.stride), 0xEEEE);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t h = 0; h < oh; ++h)
      for (int64_t w = 0; w < ow; ++w)
        std::memcpy(&want[static_cast<size_t>(((n * oh + h) * ow + w) * s.out.stride + s.out.offset)],
                    &x[static_cast<size_t>(((n * s.h + h / 2) * s.w + w / 2) * s.in.stride +
                                           s.in.offset)],
                    static_cast<size_t>(s.c) * 2);
  rt::DeviceBuffer dx(x.size() * 2), dy(want.size() * 2);
  dx.upload(x.data());
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  const ScheduleSpace space = UpsampleTemplate::space(t);
  for (int64_t threads : space.find("threads")->domain) {
    for (int64_t px : space.find("px")->domain) {
      const ScheduleConfig cfg({{"threads", threads}, {"px", px}});
      if (!UpsampleTemplate::valid(t, cfg)) continue;
      SCOPED_TRACE(t.key() + " | " + cfg.str());
      const CudaKernel k = UpsampleTemplate::emit(t, cfg, "yc_up");
      const rt::Module module(nvrtc_compile(k.source, "yc_up", opts).cubin);
      const CUfunction fn = kernel_function(module, k);
      CUdeviceptr px_ = dx.ptr(), py = dy.ptr();
      void* args[] = {&px_, &py};
      rt::Stream stream;
      // Twice, the second over a poisoned output: each output byte is written by this launch.
      for (int rep = 0; rep < 2; ++rep) {
        dy.fill_bytes(0xEE);
        rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args, &stream);
        stream.synchronize();
        std::vector<uint16_t> got(want.size());
        dy.download(got.data());
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          if (got[i] != want[i] && bad++ == 0) first = i;
        }
        EXPECT_EQ(bad, 0u) << "first at element " << first << " of " << got.size();
      }
      constexpr int kRuns = 50;
      rt::Event start, stop;
      start.record(stream);
      for (int i = 0; i < kRuns; ++i) rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args, &stream);
      stop.record(stream);
      stop.synchronize();
      const double us = 1000.0 * stop.elapsed_ms_since(start) / kRuns;
      const double bytes = static_cast<double>(s.n * s.c * s.h * s.w) * 2 * 5;  // read 1, write 4
      std::printf("[timing] %-56s %-18s %9.2f us %8.1f GB/s\n", t.key().c_str(), cfg.str().c_str(),
                  us, bytes / us * 1e-3);
    }
  }
}

TEST(CudaGpuUpsample, Yolov8nNeckAtBatch128EveryConfig) {
  YOLOC_REQUIRE_GPU();
  run_case({128, 256, 20, 20, {384, 128}, {384, 0}});
  run_case({128, 128, 40, 40, {192, 64}, {192, 0}});
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
