#pragma once
/// What the tests of the tensor-core conv's upsampled input (CudaConvTask::up_in) share, in the
/// host emulation and on the GPU: the tasks, the configs, and the buffers of one case.
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cuda/tc_conv_template.h"
#include "conv_test_util.h"

namespace yoloc::codegen::cuda::testing::upsampled_input {

/// t reading input channels [c0, c0 + c) as the fh x fw upsampling of a value in slice `from`.
inline CudaConvTask with_up_in(CudaConvTask t, int64_t fh, int64_t fw, int64_t c0, int64_t c,
                        ChannelSlice from) {
  t.up_in = CudaConvUpIn{fh, fw, c0, c, from};
  return t;
}

/// A 1x1 conv of 48 channels at batch 3 (pixel tiles spanning images) from a 56-channel buffer,
/// channels 16..31 upsampled 2x2 from a 24-channel buffer; 32 channels all upsampled 3x1 into an
/// fp32 output; 64 channels with a residual, the upper half upsampled 2x2 (YOLOv8's neck: the
/// upsampled part first, here last).
inline std::vector<CudaConvTask> up_in_tasks(DType dtype) {
  const Activation silu = Activation::kSilu;
  return {
      with_up_in(sliced(ConvTask::make(3, 48, 6, 10, 24, 1, 1, 0, silu), dtype, dtype, {56, 8},
                        {24, 0}, {24, 0}),
                 2, 2, 16, 16, {24, 8}),
      with_up_in(CudaConvTask::dense(ConvTask::make(2, 32, 9, 4, 19, 1, 1, 0, silu), dtype,
                                     DType::kFloat32),
                 3, 1, 0, 32, {32, 0}),
      with_up_in(sliced(ConvTask::make(2, 64, 8, 8, 64, 1, 1, 0, silu, true), dtype, dtype,
                        {64, 0}, {72, 8}, {64, 0}),
                 2, 2, 32, 32, {48, 16}),
  };
}

/// The template's test configs that are valid for t, halo tiles 8 and 16 wide, and some with
/// wgmma (wg=2: im2col rows, halo tiles of 8, persistent blocks) and split-K for sm_90.
inline std::vector<std::pair<CudaConvTask, ScheduleConfig>> up_in_cases(const CudaConvTask& t) {
  std::vector<std::pair<CudaConvTask, ScheduleConfig>> out;
  for (const ScheduleConfig& cfg : tc_configs(t))
    if (TensorCoreConvTemplate::valid(t, cfg)) out.emplace_back(t, cfg);
  for (const int64_t halo : {8, 16}) {
    const ScheduleConfig cfg = with_halo(TensorCoreConvTemplate::default_config(t), halo, 1);
    if (TensorCoreConvTemplate::valid(t, cfg)) out.emplace_back(t, cfg);
  }
  CudaConvTask t90 = t;
  t90.sm = 90;
  const ScheduleSpace space = TensorCoreConvTemplate::space(t90);
  for (const auto& v : std::vector<std::map<std::string, int64_t>>{
           {{"bm", 64}, {"bn", 32}, {"bk", 32}, {"wm", 16}, {"wn", 32}, {"stages", 3}, {"wg", 2}},
           {{"bm", 128},
            {"bn", 64},
            {"bk", 16},
            {"wm", 32},
            {"wn", 64},
            {"stages", 4},
            {"wg", 2},
            {"epi", 1}},
           {{"bm", 32},
            {"bn", 32},
            {"bk", 16},
            {"wm", 16},
            {"wn", 16},
            {"stages", 3},
            {"splitk", 2}},
           {{"bm", 128},
            {"bn", 32},
            {"bk", 32},
            {"wm", 32},
            {"wn", 32},
            {"stages", 4},
            {"wg", 2},
            {"halo", 8},
            {"epi", 1}},
           {{"bm", 64},
            {"bn", 64},
            {"bk", 32},
            {"wm", 16},
            {"wn", 64},
            {"stages", 3},
            {"wg", 2},
            {"halo", 8},
            {"pers", 1}}}) {
    const ScheduleConfig cfg = space.complete(ScheduleConfig(v));
    if (TensorCoreConvTemplate::valid(t90, cfg)) out.emplace_back(t90, cfg);
  }
  return out;
}

/// One case's buffers: the concat as the reference reads it (the upsampled source in its
/// channels), the kernel's x buffer with NaN bytes in those channels (never written in the
/// program), its uin buffer holding the source, the packed weights, the residual, the output
/// (0x5a bytes) and the reference output.
struct UpInBuffers {
  ConvOperands o;
  std::vector<uint8_t> x, uin, res, y;
  Tensor packed;
};

inline UpInBuffers up_in_buffers(const CudaConvTask& t, uint32_t seed) {
  const ConvTask& c = t.conv;
  const CudaConvUpIn& u = *t.up_in;
  UpInBuffers b;
  b.o = make_operands(t, seed);
  const Tensor src = rounded_to(
      yoloc::testing::random_tensor({c.n, u.c, c.h / u.fh, c.w / u.fw}, seed + 7), t.dtype);
  const Tensor up = upsample_nearest(src, u.fh, u.fw);
  const int64_t hw = c.h * c.w;
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t ch = 0; ch < u.c; ++ch)
      std::memcpy(b.o.x.data<float>() + (i * c.c + u.c0 + ch) * hw,
                  up.data<float>() + (i * u.c + ch) * hw, static_cast<size_t>(hw) * 4);
  b.o.want = reference_conv(c, b.o.x, b.o.w, b.o.b, b.o.res);
  b.x = to_nhwc_buffer(b.o.x, t.dtype, t.in, 0x7f);
  const size_t es = dtype_size(t.dtype);
  for (int64_t p = 0; p < c.n * hw; ++p)
    std::memset(&b.x[static_cast<size_t>(p * t.in.stride + t.in.offset + u.c0) * es], 0x7f,
                static_cast<size_t>(u.c) * es);
  b.uin = to_nhwc_buffer(src, t.dtype, u.from, 0x7f);
  b.packed = TensorCoreConvTemplate::pack_weights(t, b.o.w.data<float>());
  b.res = to_nhwc_buffer(b.o.res, t.out_dtype, t.res, 0x7f);
  b.y.assign(static_cast<size_t>(c.n * c.oh * c.ow * t.out.stride) * dtype_size(t.out_dtype),
             0x5a);
  return b;
}

}  // namespace yoloc::codegen::cuda::testing::upsampled_input
