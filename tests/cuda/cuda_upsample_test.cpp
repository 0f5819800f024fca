// The upsample template: which groups it takes (a nearest Resize by integer factors of NHWC
// slices in 16-byte pieces: yolov5n's two at batch 4, where no conv writes them as its
// upsampled copy; not a bilinear Resize), its kernel in the host emulation against the reference
// executor's Resize (bit for bit: a copy rounds nothing) over dtypes, factors, slices and
// configs, and its kernels built by NVRTC for sm_80 and sm_90.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../unit/graph_builder.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tasks.h"
#include "codegen/cuda/upsample_template.h"
#include "conv_test_util.h"
#include "yoloc/half.h"
#include "cuda_emulator.h"
#include "ops/reference_executor.h"
#include "passes/pipeline.h"
#include "shared_model_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

using yoloc::testing::input;
using yoloc::testing::node;
using yoloc::testing::random_tensor;

// A nearest Resize of x [n, c, h, w] by scales (1, 1, sh, sw), asymmetric / floor (YOLO's).
std::unique_ptr<Graph> resize_graph(int64_t n, int64_t c, int64_t h, int64_t w, float sh,
                                    float sw) {
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {n, c, h, w});
  Value* roi = g->add_constant("roi", Tensor(DType::kFloat32, {0}));
  Value* scales = g->add_constant(
      "scales", Tensor::from_vector<float>({4}, std::vector<float>{1.f, 1.f, sh, sw}));
  Attrs a;
  a.set("mode", std::string("nearest"));
  a.set("coordinate_transformation_mode", std::string("asymmetric"));
  a.set("nearest_mode", std::string("floor"));
  g->outputs.push_back(node(*g, "Resize", {x, roi, scales}, a));
  return g;
}

// Values that every storage dtype holds exactly: multiples of 1/8 in [-4, 4).
Tensor exact_values(Shape s, uint32_t seed) {
  Tensor t = random_tensor(std::move(s), seed, -4.f, 4.f);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = std::floor(t.data<float>()[i] * 8) / 8;
  return t;
}

// Stores NCHW float v into an NHWC buffer of `dtype` at channel slice s (pixel stride s.stride).
std::vector<uint8_t> to_nhwc(const Tensor& v, DType dtype, const ChannelSlice& s) {
  const Shape& d = v.shape();
  const size_t esz = dtype_size(dtype);
  std::vector<uint8_t> buf(static_cast<size_t>(d[0] * d[2] * d[3] * s.stride) * esz, 0xEE);
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w) {
          const float f = v.data<float>()[((n * d[1] + c) * d[2] + h) * d[3] + w];
          const size_t at =
              static_cast<size_t>(((n * d[2] + h) * d[3] + w) * s.stride + s.offset + c);
          if (dtype == DType::kFloat32) std::memcpy(&buf[at * 4], &f, 4);
          if (dtype == DType::kFloat16) {
            const uint16_t b = Half(f).bits;
            std::memcpy(&buf[at * 2], &b, 2);
          }
          if (dtype == DType::kBFloat16) {
            const uint16_t b = BFloat16(f).bits;
            std::memcpy(&buf[at * 2], &b, 2);
          }
        }
  return buf;
}

// Runs kernel k of task t (built into emu) in the emulation on x and compares the output slice
// with the reference executor's Resize (graph g), and that the bytes outside the slice are
// untouched.
void check(const UpsampleTask& t, const CudaKernel& k, const EmulatedKernels& emu, const Graph& g) {
  SCOPED_TRACE(k.source.substr(k.source.find("// cuda_upsample"), 100));
  const Tensor x = exact_values({t.n, t.c, t.h, t.w}, 3);
  const Tensor want = run_reference(g, {{"x", x}}).at(0).tensor;
  const std::vector<uint8_t> xin = to_nhwc(x, t.dtype, t.in);
  std::vector<uint8_t> y(
      static_cast<size_t>(t.n * t.h * t.sh * t.w * t.sw * t.out.stride) * dtype_size(t.dtype),
      0xEE);
  ASSERT_EQ(emu.launch(k, {{xin.data(), xin.size()}, {y.data(), y.size()}}), "");
  const int64_t oh = t.h * t.sh, ow = t.w * t.sw;
  int bad = 0;
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t h = 0; h < oh; ++h)
      for (int64_t w = 0; w < ow; ++w)
        for (int64_t c = 0; c < t.out.stride; ++c) {
          const size_t at = static_cast<size_t>(((n * oh + h) * ow + w) * t.out.stride + c);
          const bool inside = c >= t.out.offset && c < t.out.offset + t.c;
          if (!inside) {
            for (size_t b = 0; b < dtype_size(t.dtype); ++b)
              bad += y[at * dtype_size(t.dtype) + b] != 0xEE;
            continue;
          }
          const float exp = want.data<float>()[((n * t.c + c - t.out.offset) * oh + h) * ow + w];
          bad += stored_element(y, at, t.dtype) != exp;
        }
  EXPECT_EQ(bad, 0);
}

UpsampleTask task_of(const Graph& g, DType dtype, ChannelSlice in, ChannelSlice out) {
  const Node* r = g.nodes().back();
  const Shape xs = r->input(0)->type.static_shape(), zs = r->outputs[0]->type.static_shape();
  UpsampleTask t;
  t.dtype = dtype;
  t.n = xs[0], t.c = xs[1], t.h = xs[2], t.w = xs[3];
  t.sh = zs[2] / xs[2];
  t.sw = zs[3] / xs[3];
  t.in = in;
  t.out = out;
  return t;
}

// --- which groups -------------------------------------------------------------------------------

// yolov5n at batch 4: its two 2x Resizes of the neck (above kUpsampleMaxBatch no conv writes
// them) take the upsample template, reading and writing concat slices.
TEST(UpsampleTask, Yolov5nNeckResizesAtBatch4) {
  const auto g = shared_cuda_model("yolov5n-fp16-dynbatch.onnx", Precision::kFp16, 4);
  if (!g) GTEST_SKIP() << "no yolov5n-fp16-dynbatch.onnx";
  std::vector<std::string> keys;
  for (const CudaTask& t : extract_cuda_tasks(*g)) {
    if (t.template_name == "upsample") keys.push_back(t.key);
    EXPECT_EQ(t.key.find("Resize"), std::string::npos) << "left to " << t.template_name;
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"cuda_upsample f16 n4 c128 h20 w20 x2x2 in256+128 out256+0",
                                      "cuda_upsample f16 n4 c64 h40 w40 x2x2 in128+64 out128+0"}));
}

// A bilinear Resize and slices that break the 16-byte pieces stay with other templates.
TEST(UpsampleTask, OtherResizesAreNotTaken) {
  auto g = resize_graph(1, 8, 4, 4, 2.f, 2.f);
  Node* r = g->nodes().back();
  r->attrs.set("mode", std::string("linear"));
  g->nodes().back()->group = 0;
  g->groups.push_back(FusedGroup{0, GroupKind::kElementwise, -1, "r"});
  std::string why;
  EXPECT_FALSE(upsample_task_from_group(*g, g->groups[0], &why).has_value());
  EXPECT_NE(why.find("not a nearest NHWC Resize"), std::string::npos) << why;
  const auto g2 = resize_graph(1, 8, 4, 4, 2.f, 2.f);
  UpsampleTask t = task_of(*g2, DType::kFloat16, {8, 0}, {16, 4});  // 4 halves: 8 bytes in
  EXPECT_FALSE(UpsampleTemplate::matches(t));
  t.out = {16, 8};
  EXPECT_TRUE(UpsampleTemplate::matches(t));
  t.c = 12;  // 24 bytes a pixel
  EXPECT_FALSE(UpsampleTemplate::matches(t));
}

// --- the kernel in the emulation ----------------------------------------------------------------

TEST(UpsampleEmulated, DtypesFactorsSlicesAndConfigs) {
  struct Case {
    int64_t n, c, h, w;
    float sh, sw;
    DType dtype;
    ChannelSlice in, out;
  };
  const Case cases[] = {
      {2, 16, 3, 5, 2.f, 2.f, DType::kFloat16, {24, 8}, {40, 16}},  // YOLO's 2x into a concat
      {1, 8, 4, 3, 3.f, 2.f, DType::kFloat32, {8, 0}, {12, 4}},     // fp32: pieces of 4
      {3, 8, 2, 7, 1.f, 4.f, DType::kBFloat16, {8, 0}, {8, 0}},     // dense, widths only
  };
  // Every config of every case, built into one library.
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<std::pair<const Graph*, UpsampleTask>> runs;
  std::vector<CudaKernel> kernels;
  for (const Case& c : cases) {
    graphs.push_back(resize_graph(c.n, c.c, c.h, c.w, c.sh, c.sw));
    const UpsampleTask t = task_of(*graphs.back(), c.dtype, c.in, c.out);
    ASSERT_TRUE(UpsampleTemplate::matches(t)) << t.key();
    const ScheduleSpace space = UpsampleTemplate::space(t);
    for (int64_t threads : space.find("threads")->domain)
      for (int64_t px : space.find("px")->domain) {
        const ScheduleConfig cfg({{"threads", threads}, {"px", px}});
        if (!UpsampleTemplate::valid(t, cfg)) continue;
        kernels.push_back(UpsampleTemplate::emit(t, cfg, fmt::format("yc_up{}", kernels.size())));
        runs.emplace_back(graphs.back().get(), t);
      }
  }
  EXPECT_EQ(kernels.size(), 36u);
  const EmulatedKernels emu(kernels);
  for (size_t i = 0; i < kernels.size(); ++i)
    check(runs[i].second, kernels[i], emu, *runs[i].first);
}

// yolov8n's first neck upsampling (out of and into 384-channel concat buffers) at batch 4 with
// 4 pieces a thread and 512 threads: the config a batch-128 tuning run once saw write a wrong
// value on the H200 (the GPU test CudaGpuUpsample runs it there).
TEST(UpsampleEmulated, Yolov8nSlicesAtFourPiecesA512ThreadBlock) {
  const auto g = resize_graph(4, 256, 20, 20, 2.f, 2.f);
  const UpsampleTask t = task_of(*g, DType::kFloat16, {384, 128}, {384, 0});
  const CudaKernel k =
      UpsampleTemplate::emit(t, ScheduleConfig({{"threads", 512}, {"px", 4}}), "yc_v8");
  const EmulatedKernels emu({k});
  check(t, k, emu, *g);
}

// --- NVRTC
// ----------------------------------------------------------------------------------------

TEST(UpsampleNvrtc, KernelsBuild) {
  const auto g = resize_graph(4, 256, 20, 20, 2.f, 2.f);
  std::string source;
  std::vector<std::string> symbols;
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    const UpsampleTask t = task_of(*g, d, {384, 128}, {384, 0});
    const ScheduleSpace space = UpsampleTemplate::space(t);
    for (int64_t px : space.find("px")->domain) {
      const std::string sym = fmt::format("up_{}", symbols.size());
      source +=
          UpsampleTemplate::emit(t, ScheduleConfig({{"threads", 256}, {"px", px}}), sym).source;
      symbols.push_back(sym);
    }
  }
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    NvrtcOptions opts;
    opts.arch = arch;
    const CompiledModule out = nvrtc_compile(source, symbols.front(), opts);
    EXPECT_EQ(out.cubin.compare(0, 4,
                                "\x7f"
                                "ELF"),
              0);
  }
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
