// The CUDA conv templates run in the host emulation (cuda_emulator.h) against the reference
// executor: every kernel variant (16-byte and element-wise input loads, stride, dilation, padding,
// channel counts that are not multiples of the tiles, batch 2, ReLU/SiLU, residual, channel
// slices of the input, residual and output, fp16/bf16/fp32 in, fp16/bf16/fp32 out, NHWC and NCHW
// outputs) x several configs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv_test_util.h"
#include "cuda_emulator.h"

namespace yoloc::codegen::cuda::testing {
namespace {

enum class Template { kTensorCore, kSimt };

struct Case {
  Template tmpl;
  CudaConvTask task;
  ScheduleConfig cfg;
  CudaKernel kernel;
};

// Emits every config of `configs` for every task, builds them in one shared object, runs each on
// random operands and compares with the reference.
void run(Template tmpl, const std::vector<CudaConvTask>& tasks) {
  std::vector<Case> cases;
  std::vector<CudaKernel> kernels;
  for (const CudaConvTask& t : tasks) {
    const bool tc = tmpl == Template::kTensorCore;
    ASSERT_TRUE(tc ? TensorCoreConvTemplate::matches(t) : SimtConvTemplate::matches(t)) << t.key();
    for (const ScheduleConfig& cfg : tc ? tc_configs(t) : simt_configs(t)) {
      const std::string sym = fmt::format("k{}", cases.size());
      const CudaKernel k =
          tc ? TensorCoreConvTemplate::emit(t, cfg, sym) : SimtConvTemplate::emit(t, cfg, sym);
      cases.push_back({tmpl, t, cfg, k});
      kernels.push_back(k);
    }
  }
  const EmulatedKernels emu(kernels);
  uint32_t seed = 11;
  for (const Case& c : cases) {
    const CudaConvTask& t = c.task;
    SCOPED_TRACE(t.key() + " | " + c.cfg.str());
    const ConvOperands o = make_operands(t, seed += 10);
    const Tensor packed = c.tmpl == Template::kTensorCore
                              ? TensorCoreConvTemplate::pack_weights(t, o.w.data<float>())
                              : SimtConvTemplate::pack_weights(t, o.w.data<float>());
    // The image input: dense NCHW float32 (already rounded to dtype, as the gather rounds).
    const std::vector<uint8_t> x =
        t.in_nchw_f32 ? std::vector<uint8_t>(static_cast<const uint8_t*>(o.x.raw()),
                                             static_cast<const uint8_t*>(o.x.raw()) + o.x.nbytes())
                      : to_nhwc_buffer(o.x, t.dtype, t.in, 0x7f);
    const std::vector<uint8_t> res = to_nhwc_buffer(o.res, t.out_dtype, t.res, 0x7f, t.out_nchw);
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow * t.out.stride) *
                               dtype_size(t.out_dtype),
                           0x5a);
    const std::string err = emu.launch(
        c.kernel, {x.data(), x.size()}, {packed.raw(), packed.nbytes()}, o.b.data<float>(),
        {t.conv.residual ? res.data() : nullptr, res.size()}, y.data(), y.size());
    EXPECT_EQ(err, "");
    EXPECT_TRUE(check_output(t, y, o.want, 0x5a));
  }
}

// Tasks over every path of the kernels, activations stored as `dtype`.
std::vector<CudaConvTask> tasks(DType dtype) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  return {
      // The first conv: 3 channels, element-wise loads, one 32-deep step (27 taps).
      CudaConvTask::dense(ConvTask::make(1, 3, 11, 13, 16, 3, 2, 1, Activation::kSilu), dtype,
                          dtype == f32 ? f32 : dtype),
      // Bottleneck-like: input, residual and output are slices of wider buffers.
      sliced(ConvTask::make(1, 16, 6, 7, 32, 3, 1, 1, Activation::kRelu, true), dtype,
             dtype == f32 ? f32 : dtype, {24, 8}, {48, 16}, {40, 8}),
      // 1x1, batch 2, K = 24 (not a multiple of 16), fp32 output.
      CudaConvTask::dense(ConvTask::make(2, 64, 5, 7, 24, 1, 1, 0), dtype, f32),
      // 12 channels (not a multiple of 8: element-wise), K = 19 (odd: a lone last channel),
      // odd output and residual strides and offsets (element-wise epilogue stores), fp16 output.
      sliced(ConvTask::make(1, 12, 7, 6, 19, 3, 1, 1, Activation::kSilu, true), dtype, f16, {12, 0},
             {21, 1}, {23, 3}),
      // Dilation 2.
      CudaConvTask::dense(dilated(1, 8, 8, 8, 16, 3, 2, 2, Activation::kNone), dtype,
                          dtype == f32 ? f32 : dtype),
      // Stride 2, no padding, residual, deeper than the pipeline ring (KG = 288).
      CudaConvTask::dense(ConvTask::make(1, 32, 9, 9, 16, 3, 2, 0, Activation::kSilu, true), dtype,
                          dtype == f32 ? f32 : dtype),
  };
}

TEST(CudaConvEmulated, TensorCoreFp16) { run(Template::kTensorCore, tasks(DType::kFloat16)); }

TEST(CudaConvEmulated, TensorCoreBf16) {
  const std::vector<CudaConvTask> all = tasks(DType::kBFloat16);
  run(Template::kTensorCore, {all[0], all[1], all[5]});
}

// The first conv reading the NCHW float32 image (batch 2), fp16 and bf16.
TEST(CudaConvEmulated, TensorCoreImageInput) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    CudaConvTask t =
        CudaConvTask::dense(ConvTask::make(2, 3, 11, 13, 16, 3, 2, 1, Activation::kSilu), dt, dt);
    t.in_nchw_f32 = true;
    EXPECT_FALSE(SimtConvTemplate::matches(t));
    run(Template::kTensorCore, {t});
  }
}

// YOLOX's head: 1x1 convs to 4, 1 and 2 channels written into the 7-channel concat of a level
// (odd stride, slices at 0, 4 and 5).
TEST(CudaConvEmulated, TensorCoreNarrowHeadSlices) {
  const DType f16 = DType::kFloat16;
  run(Template::kTensorCore,
      {sliced(ConvTask::make(1, 64, 6, 5, 4, 1, 1, 0), f16, f16, {64, 0}, {7, 0}, {7, 0}),
       sliced(ConvTask::make(1, 64, 6, 5, 1, 1, 1, 0), f16, f16, {64, 0}, {7, 4}, {7, 4}),
       sliced(ConvTask::make(1, 64, 6, 5, 2, 1, 1, 0), f16, f16, {64, 0}, {7, 5}, {7, 5})});
}

TEST(CudaConvEmulated, SimtFp32) { run(Template::kSimt, tasks(DType::kFloat32)); }

// Output and residual stored NCHW (the detect head's last convs): every task above so, plus 1x1
// and 3x3 convs at batch 2 over 35 and 30 pixels, so that pixel tiles span two images, the 3x3
// one with a residual and channel slices of its output and residual.
std::vector<CudaConvTask> nchw_tasks(DType dtype) {
  const DType f32 = DType::kFloat32, out = dtype == f32 ? f32 : DType::kFloat16;
  std::vector<CudaConvTask> all;
  for (const CudaConvTask& t : tasks(dtype)) all.push_back(nchw_out(t));
  all.push_back(
      nchw_out(CudaConvTask::dense(ConvTask::make(2, 32, 5, 7, 24, 1, 1, 0), dtype, out)));
  all.push_back(nchw_out(sliced(ConvTask::make(2, 16, 6, 5, 20, 3, 1, 1, Activation::kSilu, true),
                                dtype, f32, {16, 0}, {48, 16}, {40, 8})));
  return all;
}

TEST(CudaConvEmulated, TensorCoreNchwOutputFp16) {
  run(Template::kTensorCore, nchw_tasks(DType::kFloat16));
}

TEST(CudaConvEmulated, TensorCoreNchwOutputBf16) {
  const std::vector<CudaConvTask> all = nchw_tasks(DType::kBFloat16);
  run(Template::kTensorCore, {all[1], all[3], all[6], all[7]});
}

TEST(CudaConvEmulated, SimtNchwOutputFp32) { run(Template::kSimt, nchw_tasks(DType::kFloat32)); }

// The NCHW output is a workload of its own for the tuner: same shapes, another key.
TEST(CudaConvEmulated, NchwOutputHasItsOwnKey) {
  const CudaConvTask t = CudaConvTask::dense(ConvTask::make(1, 64, 80, 80, 64, 1, 1, 0),
                                             DType::kFloat16, DType::kFloat16);
  EXPECT_EQ(nchw_out(t).key(), t.key() + " out-nchw");
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
