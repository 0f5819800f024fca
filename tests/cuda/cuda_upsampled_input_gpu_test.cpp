// The tensor-core conv's upsampled input (CudaConvTask::up_in) on the GPU: the emulation's tasks
// and configs (upsampled_input_test_util.h; wgmma and split-K ones where the GPU is an sm_90) and
// yolov8n's two neck convs at batch 4 with their default configs, built by NVRTC for this GPU and
// checked against the reference executor on the materialised concat, whose upsampled channels
// hold NaN bytes in the kernel's input. Skips without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "upsampled_input_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace upsampled_input_gpu_tests {  // named: the unity build joins this file with others

namespace rt = runtime::cuda;
using namespace upsampled_input;

TEST(CudaGpuUpsampledInput, ConvsReadTheResizesSource) {
  YOLOC_REQUIRE_GPU();
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  const int sm = parse_cuda_arch(opts.arch);
  const DType f16 = DType::kFloat16;
  const Activation silu = Activation::kSilu;
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> todo;
  std::vector<CudaConvTask> tasks = up_in_tasks(f16);
  tasks.push_back(with_up_in(sliced(ConvTask::make(4, 384, 40, 40, 128, 1, 1, 0, silu), f16, f16,
                                    {384, 0}, {192, 0}, {128, 0}),
                             2, 2, 0, 256, {384, 128}));
  tasks.push_back(with_up_in(sliced(ConvTask::make(4, 192, 80, 80, 64, 1, 1, 0, silu), f16, f16,
                                    {192, 0}, {96, 0}, {64, 0}),
                             2, 2, 0, 128, {192, 64}));
  for (const CudaConvTask& t : tasks)
    for (const auto& [tt, cfg] : up_in_cases(t))
      if (tt.sm <= sm) todo.emplace_back(tt, cfg);
  ASSERT_GE(todo.size(), 20u);
  std::vector<CudaKernel> kernels;
  std::string source;
  for (size_t i = 0; i < todo.size(); ++i) {
    kernels.push_back(
        TensorCoreConvTemplate::emit(todo[i].first, todo[i].second, fmt::format("upin{}", i)));
    source += kernels.back().source;
  }
  const rt::Module module(nvrtc_compile(source, kernels[0].symbol, opts).cubin);
  rt::Stream stream;
  for (size_t i = 0; i < todo.size(); ++i) {
    const auto& [t, cfg] = todo[i];
    SCOPED_TRACE(t.key() + " | " + cfg.str());
    UpInBuffers b = up_in_buffers(t, 300 + 10 * static_cast<uint32_t>(i));
    rt::DeviceBuffer dx(b.x.size()), dw(b.packed.nbytes()), db(b.o.b.nbytes()),
        dr(b.res.size()), dy(b.y.size()), du(b.uin.size());
    dx.upload(b.x.data());
    dw.upload(b.packed.raw());
    db.upload(b.o.b.raw());
    dr.upload(b.res.data());
    dy.upload(b.y.data());
    du.upload(b.uin.data());
    CUdeviceptr px = dx.ptr(), pw = dw.ptr(), pb = db.ptr(), pr = dr.ptr(), py = dy.ptr(),
                pu = du.ptr(), pnull = 0;
    // (x, w, bias, res, y, up), then uin (tc_conv_template.h).
    void* args[] = {&px, &pw, &pb, t.conv.residual ? &pr : &pnull, &py, &pnull, &pu};
    const CudaKernel& k = kernels[i];
    rt::launch(kernel_function(module, k), rt::LaunchDims{k.grid, k.block, k.shared_bytes}, args,
               &stream);
    stream.synchronize();
    dy.download(b.y.data());
    EXPECT_TRUE(check_output(t, b.y, b.o.want, 0x5a));
  }
}

}  // namespace upsampled_input_gpu_tests
}  // namespace yoloc::codegen::cuda::testing
