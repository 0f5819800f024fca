// The box pairs (CudaConvTask::boxes) on the GPU: yolov8n's three box pairs at batch 2 (a YOLOv8
// tail as yolov8n's, boxes_test_util.h), NCHW logits, float32 and float16 outputs, with the default
// config and the valid ones of b2b_configs (wgmma first stages on sm_90), built by NVRTC for this
// GPU and checked against the pair's reference logits through a float64 DFL and the tail's decode
// (boxes::check_boxes), every other output byte untouched. Skips without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "boxes_test_util.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {
namespace boxes_gpu_tests {  // named: the unity build joins this file with others

namespace rt = runtime::cuda;
using namespace boxes;

const DType f16 = DType::kFloat16, f32 = DType::kFloat32;

TEST(CudaGpuBoxes, PairsDecodeTheirLevelsBoxesIntoTheDetectorOutput) {
  YOLOC_REQUIRE_GPU();
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  const int sm = parse_cuda_arch(opts.arch);
  // Batch 2: the second image's anchors one output image further on.
  const auto tail2 = yolov8_tail(2);
  struct Case {
    CudaConvTask task;
    ScheduleConfig cfg;
    CudaKernel kernel;
  };
  std::vector<Case> cases;
  std::string source;
  for (DType od : {f32, f16}) {
    const auto tail = with_output(tail2, od);
    for (const DetectTailLevel& l : tail->levels) {
      CudaConvTask t = box_pair(tail, l.h, l.w, l.first, true);
      t.sm = sm;
      ASSERT_TRUE(TensorCoreConvTemplate::matches(t)) << t.key();
      for (const ScheduleConfig& cfg : b2b_configs(t)) {
        if (!TensorCoreConvTemplate::valid(t, cfg)) continue;
        const CudaKernel k =
            TensorCoreConvTemplate::emit(t, cfg, fmt::format("box{}", cases.size()));
        source += k.source;
        cases.push_back({t, cfg, k});
      }
    }
  }
  ASSERT_GE(cases.size(), 12u);
  const rt::Module module(nvrtc_compile(source, cases[0].kernel.symbol, opts).cubin);
  rt::Stream stream;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.task.key() + " | " + c.cfg.str());
    const BoxInputs in = box_inputs(c.task, 90 + static_cast<uint32_t>(i));
    std::vector<uint8_t> y = box_output(c.task, 0x5a);
    rt::DeviceBuffer dx(in.x.size()), dw(in.packed.nbytes()), db(in.o.b.nbytes()), dy(y.size()),
        dw2(in.packed2.nbytes()), db2(c.task.b2b->bias.nbytes()),
        dt(in.table.size() * sizeof(float));
    dx.upload(in.x.data());
    dw.upload(in.packed.raw());
    db.upload(in.o.b.raw());
    dy.upload(y.data());
    dw2.upload(in.packed2.raw());
    db2.upload(c.task.b2b->bias.raw());
    dt.upload(in.table.data());
    CUdeviceptr px = dx.ptr(), pw = dw.ptr(), pb = db.ptr(), pnull = 0, py = dy.ptr(),
                pw2 = dw2.ptr(), pb2 = db2.ptr(), pt = dt.ptr();
    // (x, w, bias, res, y, up), the pair's (w2, bias2), the tail's table (tc_conv_template.h).
    void* args[] = {&px, &pw, &pb, &pnull, &py, &pnull, &pw2, &pb2, &pt};
    rt::launch(kernel_function(module, c.kernel),
               rt::LaunchDims{c.kernel.grid, c.kernel.block, c.kernel.shared_bytes}, args, &stream);
    stream.synchronize();
    dy.download(y.data());
    EXPECT_TRUE(check_boxes(c.task, y, in.want, 0x5a));
  }
}

}  // namespace boxes_gpu_tests
}  // namespace yoloc::codegen::cuda::testing
