#pragma once
/// What the stem-pair tests share (host emulation and GPU): tasks, random operands and the
/// reference output (the reference executor's first conv on the float32 image with float32
/// weights, rounded to the intermediate's dtype as the unfused pair stores it, then its second
/// conv), the kernel's parameter buffers, and the configs tested.
#include <cstdint>
#include <vector>

#include "codegen/cuda/stem_pair_template.h"
#include "conv_test_util.h"

namespace yoloc::codegen::cuda::testing {

/// A stem pair: `a` on the dense NCHW float32 image, `b` on its output (b's c, h, w, n follow
/// from a), storing `dtype` in the intermediate and `out_dtype` into slice `out` of its output.
inline StemPairTask stem_task(const ConvTask& a, int64_t k, int64_t kernel, int64_t stride,
                              int64_t pad, Activation act, DType dtype, DType out_dtype,
                              ChannelSlice out) {
  StemPairTask t;
  t.first = CudaConvTask::dense(a, dtype, dtype);
  t.first.in_nchw = true;
  t.second = CudaConvTask::dense(ConvTask::make(a.n, a.k, a.oh, a.ow, k, kernel, stride, pad, act),
                                 dtype, out_dtype);
  t.second.out = out;
  return t;
}

struct StemOperands {
  Tensor x, w0, b0, w1, b1, want;
};

inline StemOperands make_stem_operands(const StemPairTask& task, uint32_t seed) {
  const ConvTask& a = task.first.conv;
  const ConvTask& b = task.second.conv;
  StemOperands o;
  // The image and the first weights hold 16-bit values, which the MMA path rounds them to.
  o.x = rounded_to(yoloc::testing::random_tensor({a.n, a.c, a.h, a.w}, seed), task.second.dtype);
  const float s0 = 1.7f / std::sqrt(static_cast<float>(a.c * a.kh * a.kw));
  o.w0 = rounded_to(yoloc::testing::random_tensor({a.k, a.c, a.kh, a.kw}, seed + 1, -s0, s0),
                    task.second.dtype);
  o.b0 = yoloc::testing::random_tensor({a.k}, seed + 2, -0.5f, 0.5f);
  const float s1 = 1.7f / std::sqrt(static_cast<float>(b.c * b.kh * b.kw));
  o.w1 = rounded_to(yoloc::testing::random_tensor({b.k, b.c, b.kh, b.kw}, seed + 3, -s1, s1),
                    task.second.dtype);
  o.b1 = yoloc::testing::random_tensor({b.k}, seed + 4, -0.5f, 0.5f);
  const Tensor mid = rounded_to(reference_conv(a, o.x, o.w0, o.b0, Tensor()), task.first.out_dtype);
  o.want = reference_conv(b, mid, o.w1, o.b1, Tensor());
  return o;
}

/// The kernel's packed weights, as its parameters after x want them.
struct StemWeights {
  Tensor w0, w1;
  StemWeights(const StemPairTask& t, const StemOperands& o)
      : w0(StemPairTemplate::pack_first_weights(t, o.w0.data<float>())),
        w1(StemPairTemplate::pack_second_weights(t, o.w1.data<float>())) {}
};

/// The output buffer's bytes (NHWC, the second conv's out_dtype and slice stride).
inline size_t stem_output_bytes(const StemPairTask& t) {
  const ConvTask& b = t.second.conv;
  return static_cast<size_t>(b.n * b.oh * b.ow * t.second.out.stride) *
         dtype_size(t.second.out_dtype);
}

/// The default config and every valid one of a few tile shapes (several m-tiles per warp among
/// them), both first-conv paths.
inline std::vector<ScheduleConfig> stem_configs(const StemPairTask& t) {
  std::vector<ScheduleConfig> out = {StemPairTemplate::default_config(t)};
  for (const auto& [th, tw, warps, pp, mma] :
       std::vector<std::array<int64_t, 5>>{{1, 16, 2, 1, 0},
                                           {2, 16, 2, 2, 0},
                                           {4, 16, 2, 1, 1},
                                           {2, 32, 4, 2, 0},
                                           {2, 32, 4, 1, 1},
                                           {8, 8, 4, 1, 1},
                                           {4, 32, 8, 1, 0},
                                           {8, 16, 2, 1, 1}}) {
    const ScheduleConfig c({{"th", th}, {"tw", tw}, {"warps", warps}, {"pp", pp}, {"mma", mma}});
    if (StemPairTemplate::valid(t, c) && !(c == out[0])) out.push_back(c);
  }
  return out;
}

}  // namespace yoloc::codegen::cuda::testing
