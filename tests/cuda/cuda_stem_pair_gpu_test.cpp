// GPU tests of the stem-pair template (label gpu; they skip where there is no CUDA device or
// driver): YOLOv8's stem at 640 x 640, batch 1 and 2, and YOLOv5's 6x6 stem, fp16, the configs of
// stem_configs (both first-conv paths), against the reference executor
// (stem_pair_test_util.h), the bytes outside the output slice untouched; with a timing line per
// config.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "stem_pair_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;

void run_every_config(const StemPairTask& t) {
  ASSERT_TRUE(StemPairTemplate::matches(t)) << t.key();
  const StemOperands o = make_stem_operands(t, 11);
  const StemWeights w(t, o);
  rt::DeviceBuffer dx(o.x.nbytes()), dw0(w.w0.nbytes()), db0(o.b0.nbytes()), dw1(w.w1.nbytes()),
      db1(o.b1.nbytes()), dy(stem_output_bytes(t));
  dx.upload(o.x.raw());
  dw0.upload(w.w0.raw());
  db0.upload(o.b0.raw());
  dw1.upload(w.w1.raw());
  db1.upload(o.b1.raw());
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  int configs = 0;
  for (const ScheduleConfig& cfg : stem_configs(t)) {
    ++configs;
    SCOPED_TRACE(t.key() + " | " + cfg.str());
    const CudaKernel k = StemPairTemplate::emit(t, cfg, "yc_stem");
    const rt::Module module(nvrtc_compile(k.source, "yc_stem", opts).cubin);
    const CUfunction fn = kernel_function(module, k);
    CUdeviceptr a[] = {dx.ptr(), dw0.ptr(), db0.ptr(), dw1.ptr(), db1.ptr(), dy.ptr()};
    void* args[] = {&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]};
    rt::Stream stream;
    dy.fill_bytes(0x5a);
    rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args, &stream);
    stream.synchronize();
    std::vector<uint8_t> y(stem_output_bytes(t));
    dy.download(y.data());
    EXPECT_TRUE(check_output(t.second, y, o.want, 0x5a));
    constexpr int kRuns = 50;
    rt::Event start, stop;
    start.record(stream);
    for (int i = 0; i < kRuns; ++i)
      rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args, &stream);
    stop.record(stream);
    stop.synchronize();
    std::printf("[timing] stem pair n%lld %lldx%lld %-30s %9.2f us\n",
                static_cast<long long>(t.first.conv.n), static_cast<long long>(t.first.conv.kh),
                static_cast<long long>(t.first.conv.kw), cfg.str().c_str(),
                1000.0 * stop.elapsed_ms_since(start) / kRuns);
  }
  EXPECT_GE(configs, 6);
}

const Activation silu = Activation::kSilu;

TEST(CudaGpuStemPair, Yolov8nStemEveryConfig) {
  YOLOC_REQUIRE_GPU();
  for (int64_t n : {1, 2}) {
    run_every_config(stem_task(ConvTask::make(n, 3, 640, 640, 16, 3, 2, 1, silu), 32, 3, 2, 1, silu,
                               DType::kFloat16, DType::kFloat16, {32, 0}));
  }
}

TEST(CudaGpuStemPair, Yolov5StemIntoSliceEveryConfig) {
  YOLOC_REQUIRE_GPU();
  run_every_config(stem_task(ConvTask::make(1, 3, 640, 640, 16, 6, 2, 2, silu), 32, 3, 2, 1, silu,
                             DType::kFloat16, DType::kFloat16, {48, 16}));
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
