// GPU tests of the CUDA conv templates (label gpu; they skip where there is no CUDA device or
// driver): the yolov8n conv shapes and the first convs of YOLOv8 / YOLOv5 on the NCHW float32
// image x each template that takes them x several configs on random data against the reference
// executor, plus a timing table of every config (printed, not asserted), and the driver wrappers
// (streams, events, pinned copies, CUDA graph replay).
//
// This binary is self-contained (scripts/gpu_smoke.sh runs it on the GPU machine): it links the
// ops and the reference executor without the ONNX frontend, gtest statically, libnvrtc from the
// toolkit, and opens libcuda at run time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <future>
#include <memory>

#include "codegen/cuda/nvrtc_compiler.h"
#include "conv_test_util.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;

struct Layer {
  const char* what;
  ConvTask conv;
  ChannelSlice in{0, 0}, out{0, 0}, res{0, 0};  // stride 0: dense
  bool out_nchw = false;
  bool image = false;  // the input is the NCHW image (float32; the direct template also fp16)
};

// The conv layers of yolov8n at 640x640 (a selection covering every size and form).
std::vector<Layer> yolov8n_layers() {
  const Activation silu = Activation::kSilu;
  return {
      {"model.0 first conv 3->16 3x3 s2 @640", ConvTask::make(1, 3, 640, 640, 16, 3, 2, 1, silu)},
      {"model.1 16->32 3x3 s2 @320", ConvTask::make(1, 16, 320, 320, 32, 3, 2, 1, silu)},
      {"model.2 C2f m.0.cv2 16->16 3x3 @160 +res, slices",
       ConvTask::make(1, 16, 160, 160, 16, 3, 1, 1, silu, true),
       {16, 0},
       {48, 32},
       {48, 16}},
      {"model.4 C2f cv1 64->64 1x1 @80", ConvTask::make(1, 64, 80, 80, 64, 1, 1, 0, silu)},
      {"model.4 C2f m.0.cv1 32->32 3x3 @80 from a split slice",
       ConvTask::make(1, 32, 80, 80, 32, 3, 1, 1, silu),
       {64, 32},
       {0, 0},
       {0, 0}},
      {"model.6 C2f m.0.cv2 128->128 3x3 @40 +res",
       ConvTask::make(1, 128, 40, 40, 128, 3, 1, 1, silu, true)},
      {"model.8 C2f 256->256 3x3 @20", ConvTask::make(1, 256, 20, 20, 256, 3, 1, 1, silu)},
      {"model.9 SPPF cv2 512->256 1x1 @20", ConvTask::make(1, 512, 20, 20, 256, 1, 1, 0, silu)},
      {"model.7 256->256 3x3 s2 @40->20", ConvTask::make(1, 256, 40, 40, 256, 3, 2, 1, silu)},
      {"head P5 box+class 256->144 3x3 @20", ConvTask::make(1, 256, 20, 20, 144, 3, 1, 1, silu)},
      {"model.8 C2f m.0.cv2 128->128 3x3 @20 +res, slices",
       ConvTask::make(1, 128, 20, 20, 128, 3, 1, 1, silu, true),
       {256, 128},
       {384, 256},
       {256, 128}},
      {"head cv3 class conv 80->80 1x1 @40", ConvTask::make(1, 80, 40, 40, 80, 1, 1, 0)},
      // The head's last convs as compiled: NCHW out, for the detect tail (layout_selection).
      {"head cv2 box conv 64->64 1x1 @80 NCHW out",
       ConvTask::make(1, 64, 80, 80, 64, 1, 1, 0),
       {0, 0},
       {0, 0},
       {0, 0},
       true},
      {"head cv3 class conv 80->80 1x1 @40 NCHW out batch 2",
       ConvTask::make(2, 80, 40, 40, 80, 1, 1, 0),
       {0, 0},
       {0, 0},
       {0, 0},
       true},
  };
}

// The first convs on the image (the tensor-core and the direct template), at batch 1 and 8.
std::vector<Layer> stem_layers() {
  const Activation silu = Activation::kSilu;
  const auto image = [](const char* what, const ConvTask& conv) {
    Layer l{what, conv};
    l.image = true;
    return l;
  };
  return {
      image("v8n stem image 3->16 3x3 s2 @640", ConvTask::make(1, 3, 640, 640, 16, 3, 2, 1, silu)),
      image("v8n stem image 3->16 3x3 s2 @640 batch 8",
            ConvTask::make(8, 3, 640, 640, 16, 3, 2, 1, silu)),
      image("v8m stem image 3->48 3x3 s2 @640", ConvTask::make(1, 3, 640, 640, 48, 3, 2, 1, silu)),
      image("v5n stem image 3->16 6x6 s2 p2 @640",
            ConvTask::make(1, 3, 640, 640, 16, 6, 2, 2, silu)),
  };
}

// YOLOX-nano's depthwise convs (DWConv, 416x416): the stride-2 one of dark2 and a stride-1 one
// of a CSP bottleneck, at batch 1 and 32.
std::vector<Layer> depthwise_layers() {
  const Activation silu = Activation::kSilu;
  return {
      {"yolox-nano dark2 dw 16 3x3 s2 @208",
       depthwise(ConvTask::make(1, 16, 208, 208, 16, 3, 2, 1, silu))},
      {"yolox-nano dark3 dw 64 3x3 @52",
       depthwise(ConvTask::make(1, 64, 52, 52, 64, 3, 1, 1, silu))},
      {"yolox-nano dark3 dw 64 3x3 @52 batch 32",
       depthwise(ConvTask::make(32, 64, 52, 52, 64, 3, 1, 1, silu))},
  };
}

std::vector<Layer> all_layers() {
  std::vector<Layer> out = yolov8n_layers();
  for (const Layer& s : stem_layers()) out.push_back(s);
  for (const Layer& s : depthwise_layers()) out.push_back(s);
  return out;
}

// The task for a device of compute capability sm (as in sm_XX).
CudaConvTask make_task(const Layer& s, DType dtype, DType out_dtype, int sm) {
  CudaConvTask t = CudaConvTask::dense(s.conv, dtype, out_dtype);
  t.sm = sm;
  if (s.in.stride) t.in = s.in;
  if (s.out.stride) t.out = s.out;
  if (s.res.stride) t.res = s.res;
  t.out_nchw = s.out_nchw;
  t.in_nchw = s.image;
  return t;
}

struct Case {
  Template tmpl;
  CudaConvTask task;
  ScheduleConfig cfg;
  CudaKernel kernel;
};



// Every layer's cases, built (one module per layer) for the device on all cores at first use.
struct Built {
  std::vector<Case> cases;
  CompiledModule module;
};
std::vector<Case> cases_of(const Layer& s, int sm);

const std::vector<Built>& built_layers() {
  static const std::vector<Built> built = [] {
    const std::vector<Layer> layers = all_layers();
    NvrtcOptions opts;
    opts.arch = context()->info().arch();
    const int sm = parse_cuda_arch(opts.arch);
    std::vector<std::future<Built>> jobs;
    for (const Layer& s : layers) {
      jobs.push_back(std::async(std::launch::async, [s, opts, sm] {
        Built b;
        b.cases = cases_of(s, sm);
        std::string source;
        for (const Case& c : b.cases) source += c.kernel.source;
        b.module = nvrtc_compile(source, b.cases.front().kernel.symbol, opts);
        return b;
      }));
    }
    std::vector<Built> out;
    for (auto& j : jobs) out.push_back(j.get());
    return out;
  }();
  return built;
}

// Mean microseconds of `runs` back-to-back repetitions of `body` on `stream` after a warm-up.
template <class Body>
double time_us(rt::Stream& stream, Body body, int runs = 100) {
  rt::Event start, stop;
  for (int i = 0; i < 5; ++i) body();
  start.record(stream);
  for (int i = 0; i < runs; ++i) body();
  stop.record(stream);
  stop.synchronize();
  return 1000.0 * stop.elapsed_ms_since(start) / runs;
}

// The device buffers of one conv launch, uploaded, and the kernel's six arguments (x, w, bias,
// res, y, up) pointing at them; a null residual or upsampled copy where none is given.
class ConvLaunch {
 public:
  ConvLaunch(const std::vector<uint8_t>& x, const Tensor& packed, const Tensor& bias,
             const std::vector<uint8_t>* res, const std::vector<uint8_t>& y,
             const std::vector<uint8_t>* up)
      : dx_(x.size()),
        dw_(packed.nbytes()),
        db_(bias.nbytes()),
        dr_(res ? res->size() : 0),
        dy_(y.size()),
        du_(up ? up->size() : 0) {
    dx_.upload(x.data());
    dw_.upload(packed.raw());
    db_.upload(bias.raw());
    if (res) dr_.upload(res->data());
    dy_.upload(y.data());
    if (up) du_.upload(up->data());
    ptrs_ = {dx_.ptr(), dw_.ptr(), db_.ptr(), res ? dr_.ptr() : 0, dy_.ptr(), up ? du_.ptr() : 0};
    for (size_t i = 0; i < ptrs_.size(); ++i) args_[i] = &ptrs_[i];
  }
  ConvLaunch(const ConvLaunch&) = delete;
  ConvLaunch& operator=(const ConvLaunch&) = delete;

  void** args() { return args_.data(); }
  const rt::DeviceBuffer& y() const { return dy_; }
  const rt::DeviceBuffer& up() const { return du_; }

 private:
  rt::DeviceBuffer dx_, dw_, db_, dr_, dy_, du_;
  std::array<CUdeviceptr, 6> ptrs_{};
  std::array<void*, 6> args_{};
};

// Runs every case of one layer on random operands (one set per dtype pair), compares with the
// reference, and times the kernel.
void run_layer(const Layer& s, const Built& built) {
  const std::vector<Case>& cases = built.cases;
  const rt::Module module(built.module.cubin);
  rt::Stream stream;
  std::map<std::string, ConvOperands> operands;  // by dtype pair
  for (const Case& c : cases) {
    const CudaConvTask& t = c.task;
    SCOPED_TRACE(std::string(s.what) + " | " + t.key() + " | " + c.cfg.str());
    const std::string pair = std::string(short_dtype_name(t.dtype)) + short_dtype_name(t.out_dtype);
    if (!operands.count(pair)) operands[pair] = make_operands(t, 1234);
    const ConvOperands& o = operands.at(pair);
    const Tensor packed = template_weights(c.tmpl, t, o.w);
    const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
    const std::vector<uint8_t> res = to_nhwc_buffer(o.res, t.out_dtype, t.res, 0x7f, t.out_nchw);
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow * t.out.stride) *
                               dtype_size(t.out_dtype),
                           0x5a);
    ConvLaunch l(x, packed, o.b, &res, y, nullptr);
    const CUfunction fn = kernel_function(module, c.kernel);
    void** args = l.args();
    const rt::LaunchDims dims = rt::fit_to_device(
        fn, {c.kernel.grid, c.kernel.block, c.kernel.shared_bytes, false, c.kernel.persistent});
    rt::launch(fn, dims, args, &stream);
    stream.synchronize();
    l.y().download(y.data());
    EXPECT_TRUE(check_output(t, y, o.want, 0x5a));
    const double us = time_us(stream, [&] { rt::launch(fn, dims, args, &stream); }, 50);
    std::printf("[timing] %-52s %-6s %-5s->%-4s %-44s %9.2f us %7.2f TFLOP/s\n", s.what,
                template_tag(c.tmpl),
                t.in_nchw ? (t.image_dtype == DType::kFloat32 ? "image" : "img16")
                          : short_dtype_name(t.dtype),
                short_dtype_name(t.out_dtype), c.cfg.str().c_str(), us, t.conv.flops() / us * 1e-6);
  }
}

// The default with the other split-K factors valid for t (sm_90: 2, 4, 8), for the timing table.
std::vector<ScheduleConfig> splitk_variants(const CudaConvTask& t) {
  const ScheduleConfig def = TensorCoreConvTemplate::default_config(t);
  std::vector<ScheduleConfig> out;
  for (int64_t s : {1, 2, 4, 8}) {
    ScheduleConfig c = def;
    c.set("splitk", s);
    if (!(c == def) && TensorCoreConvTemplate::valid(t, c)) out.push_back(c);
  }
  return out;
}

std::vector<Case> cases_of(const Layer& s, int sm) {
  std::vector<Case> cases;
  const auto add = [&](Template tmpl, const CudaConvTask& t,
                       const std::vector<ScheduleConfig>& cfgs) {
    for (const ScheduleConfig& cfg : cfgs) {
      const std::string sym = fmt::format("k{}", cases.size());
      cases.push_back({tmpl, t, cfg, template_emit(tmpl, t, cfg, sym)});
    }
  };
  const CudaConvTask f16 = make_task(s, DType::kFloat16, DType::kFloat16, sm);
  if (s.image) {
    // What yoloc chose before the direct template, then the direct template's configs.
    add(Template::kTensorCore, f16, {TensorCoreConvTemplate::default_config(f16)});
    add(Template::kDirect, f16, direct_configs(f16));
    const CudaConvTask f32 = make_task(s, DType::kFloat32, DType::kFloat32, sm);
    add(Template::kDirect, f32, {DirectConvTemplate::default_config(f32)});
    // The fp16 image (--io-precision fp16).
    CudaConvTask narrow = f16;
    narrow.image_dtype = DType::kFloat16;
    add(Template::kDirect, narrow, direct_configs(narrow));
    return cases;
  }
  if (DwConvTemplate::matches(f16)) {
    add(Template::kDepthwise, f16, dw_configs(f16));
    const CudaConvTask bf16 = make_task(s, DType::kBFloat16, DType::kBFloat16, sm);
    add(Template::kDepthwise, bf16, {DwConvTemplate::default_config(bf16)});
    const CudaConvTask f32 = make_task(s, DType::kFloat32, DType::kFloat32, sm);
    add(Template::kDepthwise, f32, {DwConvTemplate::default_config(f32)});
    return cases;
  }
  const CudaConvTask bf16 = make_task(s, DType::kBFloat16, DType::kBFloat16, sm);
  const CudaConvTask f16_f32 = make_task(s, DType::kFloat16, DType::kFloat32, sm);
  const CudaConvTask f32 = make_task(s, DType::kFloat32, DType::kFloat32, sm);
  add(Template::kTensorCore, f16, tc_configs(f16));
  // Split-K (sm_90): the default's tile with every other factor, and bf16.
  add(Template::kTensorCore, f16, splitk_variants(f16));
  add(Template::kTensorCore, bf16, {TensorCoreConvTemplate::default_config(bf16)});
  if (s.conv.oh * s.conv.ow <= 40 * 40) add(Template::kTensorCore, bf16, splitk_variants(bf16));
  add(Template::kTensorCore, f16_f32, {TensorCoreConvTemplate::default_config(f16_f32)});
  add(Template::kSimt, f32, simt_configs(f32));
  if (DirectConvTemplate::matches(f16)) add(Template::kDirect, f16, direct_configs(f16));
  return cases;
}

class CudaGpuConv : public ::testing::TestWithParam<int> {};

TEST_P(CudaGpuConv, MatchesReference) {
  YOLOC_REQUIRE_GPU();
  const auto i = static_cast<size_t>(GetParam());
  run_layer(all_layers().at(i), built_layers().at(i));
}

INSTANTIATE_TEST_SUITE_P(Yolov8nAndStems, CudaGpuConv,
                         ::testing::Range(0, static_cast<int>(all_layers().size())));

TEST(CudaGpu, StreamsEventsPinnedCopiesAndGraphReplay) {
  YOLOC_REQUIRE_GPU();
  const Layer s{"graph replay", ConvTask::make(2, 32, 24, 24, 48, 3, 1, 1, Activation::kSilu)};
  const CudaConvTask t = make_task(s, DType::kFloat16, DType::kFloat16, 80);
  const ScheduleConfig cfg = TensorCoreConvTemplate::default_config(t);
  const CudaKernel k = TensorCoreConvTemplate::emit(t, cfg, "replayed");
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  const rt::Module module(nvrtc_compile(k.source, k.symbol, opts).cubin);
  const ConvOperands o = make_operands(t, 99);
  const Tensor packed = TensorCoreConvTemplate::pack_weights(t, o.w.data<float>());
  const std::vector<uint8_t> x = to_nhwc_buffer(o.x, t.dtype, t.in, 0);
  const size_t y_bytes = static_cast<size_t>(2 * 24 * 24 * 48 * 2);
  rt::HostBuffer hx(x.size()), hy(y_bytes);
  std::memcpy(hx.data(), x.data(), x.size());
  rt::DeviceBuffer dx(x.size()), dw(packed.nbytes()), db(o.b.nbytes()), dy(y_bytes);
  dw.upload(packed.raw());
  db.upload(o.b.raw());
  dy.fill_bytes(0x5a);
  rt::Stream stream;
  CUfunction fn = module.function(k.symbol);
  CUdeviceptr px = dx.ptr(), pw = dw.ptr(), pb = db.ptr(), pr = 0, py = dy.ptr(), pu = 0;
  void* args[] = {&px, &pw, &pb, &pr, &py, &pu};
  // Upload, conv, download captured once, replayed twice.
  stream.begin_capture();
  dx.upload_async(hx.data(), stream);
  rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args, &stream);
  dy.download_async(hy.data(), stream);
  const rt::Graph graph = stream.end_capture();
  for (int i = 0; i < 2; ++i) {
    std::memset(hy.data(), 0, y_bytes);
    graph.launch(stream);
    stream.synchronize();
    const std::vector<uint8_t> y(static_cast<uint8_t*>(hy.data()),
                                 static_cast<uint8_t*>(hy.data()) + y_bytes);
    EXPECT_TRUE(check_output(t, y, o.want, 0x5a)) << "replay " << i;
  }
  EXPECT_THROW(module.function("no_such_kernel"), UserError);
}

// Split-K clusters as the runtime launches them: with programmatic stream serialization (PDL,
// cuLaunchKernelEx), two launches back to back in a captured graph, the second reading the first's
// output as its residual, on a small deep layer (its default splits in 4).
TEST(CudaGpu, SplitKClustersWithPdlInGraph) {
  YOLOC_REQUIRE_GPU();
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  if (parse_cuda_arch(opts.arch) < 90) GTEST_SKIP() << "split-K needs sm_90";
  const Layer s{"split-K", ConvTask::make(1, 256, 20, 20, 256, 3, 1, 1, Activation::kSilu, true)};
  const CudaConvTask t = make_task(s, DType::kFloat16, DType::kFloat16, 90);
  ScheduleConfig cfg = TensorCoreConvTemplate::default_config(t);
  ASSERT_EQ(cfg.get("splitk"), 2) << cfg.str();  // 104 tiles of 72 steps
  cfg.set("splitk", 4);
  const CudaKernel k = TensorCoreConvTemplate::emit(t, cfg, "split");
  const rt::Module module(nvrtc_compile(k.source, k.symbol, opts).cubin);
  const ConvOperands o = make_operands(t, 7);
  const Tensor packed = TensorCoreConvTemplate::pack_weights(t, o.w.data<float>());
  const std::vector<uint8_t> x = to_nhwc_buffer(o.x, t.dtype, t.in, 0);
  const std::vector<uint8_t> res = to_nhwc_buffer(o.res, t.out_dtype, t.res, 0);
  const size_t y_bytes = static_cast<size_t>(20 * 20 * 256 * 2);
  rt::DeviceBuffer dx(x.size()), dw(packed.nbytes()), db(o.b.nbytes()), dr(res.size()),
      dy1(y_bytes), dy2(y_bytes);
  dx.upload(x.data());
  dw.upload(packed.raw());
  db.upload(o.b.raw());
  dr.upload(res.data());
  dy1.fill_bytes(0x5a);
  dy2.fill_bytes(0x5a);
  rt::Stream stream;
  const CUfunction fn = kernel_function(module, k);
  CUdeviceptr px = dx.ptr(), pw = dw.ptr(), pb = db.ptr(), pr = dr.ptr(), py1 = dy1.ptr(),
              py2 = dy2.ptr(), pu = 0;
  void* first[] = {&px, &pw, &pb, &pr, &py1, &pu};
  void* second[] = {&px, &pw, &pb, &py1, &py2, &pu};  // residual: the first's output
  rt::LaunchDims dims{k.grid, k.block, k.shared_bytes};
  dims.programmatic = true;
  stream.begin_capture();
  rt::launch(fn, dims, first, &stream);
  rt::launch(fn, dims, second, &stream);
  const rt::Graph graph = stream.end_capture();
  graph.launch(stream);
  stream.synchronize();
  std::vector<uint8_t> y1(y_bytes), y2(y_bytes);
  dy1.download(y1.data());
  dy2.download(y2.data());
  EXPECT_TRUE(check_output(t, y1, o.want, 0x5a));
  // The second: the same conv plus the first's output (as stored) in place of the residual.
  Tensor want2 = o.want.clone();
  Tensor first_out(DType::kFloat16, {1, 20, 20, 256});  // NHWC
  std::memcpy(first_out.raw(), y1.data(), y_bytes);
  const Tensor first_f32 = first_out.cast(DType::kFloat32);
  const Tensor res_f32 = o.res.cast(DType::kFloat32);
  float* w2 = want2.data<float>();
  for (int64_t c = 0; c < 256; ++c)
    for (int64_t p = 0; p < 400; ++p) {
      const int64_t nchw = c * 400 + p;
      w2[nchw] += first_f32.data<float>()[p * 256 + c] - res_f32.data<float>()[nchw];
    }
  EXPECT_TRUE(check_output(t, y2, want2, 0x5a));
}

// The upsampled copy (a nearest Resize fused into the conv) of yolov8n's two upsampled convs
// (SPPF cv2 at 20x20, C2f cv2 at 40x40; their outputs into the head's concats, their copies into
// the first slice of the neck's concats) at batch 1 and 32, each template form (tensor-core plain
// and staged epilogues, split-K on sm_90, SIMT): both outputs against the reference, and the time
// with the copy beside the time without it (printed, not asserted; the Resize kernel it replaces
// costs a launch and a pass over the copy).
TEST(CudaGpu, ConvWithUpsampledCopy) {
  YOLOC_REQUIRE_GPU();
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  const int sm = parse_cuda_arch(opts.arch);
  const Activation silu = Activation::kSilu;
  struct Up {
    const char* what;
    ConvTask conv;
    ChannelSlice out, up;
  };
  std::vector<Up> layers;
  for (int64_t n : {1, 32}) {
    layers.push_back({"model.9 SPPF cv2 512->256 1x1 @20, copy @40",
                      ConvTask::make(n, 512, 20, 20, 256, 1, 1, 0, silu), {384, 128}, {384, 0}});
    layers.push_back({"model.12 C2f cv2 384->128 1x1 @40, copy @80",
                      ConvTask::make(n, 384, 40, 40, 128, 1, 1, 0, silu), {192, 64}, {192, 0}});
  }
  std::vector<Case> cases;
  for (const Up& l : layers) {
    for (DType dt : {DType::kFloat16, DType::kFloat32}) {
      CudaConvTask plain = sliced(l.conv, dt, dt, {l.conv.c, 0}, l.out, {l.conv.k, 0});
      plain.sm = sm;
      const CudaConvTask up = with_up(plain, 2, 2, l.up);
      const Template tmpl = dt == DType::kFloat16 ? Template::kTensorCore : Template::kSimt;
      std::vector<ScheduleConfig> cfgs = {template_default(tmpl, up)};
      if (tmpl == Template::kTensorCore) {
        const ScheduleConfig def = cfgs[0];
        for (const ScheduleConfig& c : {with_l1_epi(def, 0, 1), [&] {
               ScheduleConfig s = with_l1_epi(def, 0, 0);
               s.set("splitk", 2);
               return s;
             }()}) {
          if (!(c == def) && TensorCoreConvTemplate::valid(up, c)) cfgs.push_back(c);
        }
      }
      for (const ScheduleConfig& cfg : cfgs) {
        for (const CudaConvTask& t : {up, plain}) {
          const std::string sym = fmt::format("k{}", cases.size());
          cases.push_back({tmpl, t, cfg, template_emit(tmpl, t, cfg, sym)});
        }
      }
    }
  }
  std::string source;
  for (const Case& c : cases) source += c.kernel.source;
  const rt::Module module(nvrtc_compile(source, cases.front().kernel.symbol, opts).cubin);
  rt::Stream stream;
  double with_copy = 0;
  for (const Case& c : cases) {
    const CudaConvTask& t = c.task;
    SCOPED_TRACE(t.key() + " | " + c.cfg.str());
    const ConvOperands o = make_operands(t, 4321);
    const Tensor packed = template_weights(c.tmpl, t, o.w);
    const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow * t.out.stride) *
                               dtype_size(t.out_dtype),
                           0x5a);
    std::vector<uint8_t> up(t.up ? upsampled_bytes(t) : 0, 0x5a);
    ConvLaunch l(x, packed, o.b, nullptr, y, t.up ? &up : nullptr);
    const CUfunction fn = kernel_function(module, c.kernel);
    void** args = l.args();
    const rt::LaunchDims dims = rt::fit_to_device(
        fn, {c.kernel.grid, c.kernel.block, c.kernel.shared_bytes, false, c.kernel.persistent});
    rt::launch(fn, dims, args, &stream);
    stream.synchronize();
    l.y().download(y.data());
    EXPECT_TRUE(check_output(t, y, o.want, 0x5a));
    if (t.up) {
      l.up().download(up.data());
      EXPECT_TRUE(check_output(upsampled_view(t), up,
                               upsample_nearest(o.want, t.up->sh, t.up->sw), 0x5a))
          << "upsampled copy";
    }
    const double us = time_us(stream, [&] { rt::launch(fn, dims, args, &stream); }, 50);
    if (t.up) {
      with_copy = us;
    } else {
      std::printf("[timing] up2x2 %-6s n%-3lld k%-4lld %lldx%lld %-4s %-52s %9.2f us with the "
                  "copy, %9.2f us without (+%.2f)\n",
                  template_tag(c.tmpl), static_cast<long long>(t.conv.n),
                  static_cast<long long>(t.conv.k), static_cast<long long>(t.conv.oh),
                  static_cast<long long>(t.conv.ow), short_dtype_name(t.dtype),
                  c.cfg.str().c_str(), with_copy, us, with_copy - us);
    }
  }
}

// yolov8n's back-to-back pairs at batch 1 (what the CUDA target fuses, yolov8n_b2b_layers), fp16:
// the fused kernel (default config) against the reference of the two convs, the intermediate
// rounded as stored (on sm_90 also the b2b_configs with a wgmma first stage, wg=2); then the time
// of the fused kernel and of the two unfused kernels (their default configs) one after the
// other, printed (not asserted: the fusion saves a launch, which a CUDA graph of the whole
// network shows better than back-to-back launches here).
TEST(CudaGpu, B2bPairsOfYolov8nMatchReferenceAndTime) {
  YOLOC_REQUIRE_GPU();
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  const int sm = parse_cuda_arch(opts.arch);
  const std::vector<B2bLayer> layers = yolov8n_b2b_layers(DType::kFloat16, sm);
  std::string source;
  std::vector<std::array<CudaKernel, 3>> kernels;  // fused, first alone, second alone
  // Fused with a wgmma first stage (sm_90): config, kernel.
  std::vector<std::vector<std::pair<std::string, CudaKernel>>> wgmma(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const CudaConvTask& t = layers[i].task;
    const CudaConvTask a = first_stage(t), b = t.second_stage();
    for (const ScheduleConfig& c : b2b_configs(t)) {
      if (c.get("wg") != 2) continue;
      wgmma[i].emplace_back(c.str(), TensorCoreConvTemplate::emit(
                                         t, c, fmt::format("fused{}_wg{}", i, wgmma[i].size())));
      source += wgmma[i].back().second.source;
    }
    kernels.push_back(
        {TensorCoreConvTemplate::emit(t, TensorCoreConvTemplate::default_config(t),
                                      fmt::format("fused{}", i)),
         TensorCoreConvTemplate::emit(a, TensorCoreConvTemplate::default_config(a),
                                      fmt::format("first{}", i)),
         TensorCoreConvTemplate::emit(b, TensorCoreConvTemplate::default_config(b),
                                      fmt::format("second{}", i))});
    for (const CudaKernel& k : kernels.back()) source += k.source;
  }
  const rt::Module module(nvrtc_compile(source, kernels[0][0].symbol, opts).cubin);
  rt::Stream stream;
  double fused_total = 0, unfused_total = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const CudaConvTask& t = layers[i].task;
    SCOPED_TRACE(std::string(layers[i].what) + " | " + t.key());
    const CudaConvTask a = first_stage(t), b = t.second_stage();
    const ConvOperands o = make_operands(a, 500 + static_cast<uint32_t>(i));
    const Tensor want = reference_b2b(t, o);
    const Tensor w1 = TensorCoreConvTemplate::pack_weights(t, o.w.data<float>());
    const Tensor w2 = TensorCoreConvTemplate::pack_b2b_weights(t);
    const std::vector<uint8_t> x = input_buffer(t, o.x, 0x7f);
    std::vector<uint8_t> y(static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow * b.out.stride) *
                               dtype_size(b.out_dtype),
                           0x5a);
    const size_t mid_bytes =
        static_cast<size_t>(t.conv.n * t.conv.oh * t.conv.ow * t.conv.k) * dtype_size(t.dtype);
    rt::DeviceBuffer dx(x.size()), dw1(w1.nbytes()), db1(o.b.nbytes()), dy(y.size()),
        dw2(w2.nbytes()), db2(t.b2b->bias.nbytes()), dmid(mid_bytes);
    dx.upload(x.data());
    dw1.upload(w1.raw());
    db1.upload(o.b.raw());
    dw2.upload(w2.raw());
    db2.upload(t.b2b->bias.raw());
    dy.upload(y.data());
    CUfunction fns[3];
    for (int k = 0; k < 3; ++k) fns[k] = kernel_function(module, kernels[i][k]);
    const auto dims = [&](int k) {
      return rt::LaunchDims{kernels[i][k].grid, kernels[i][k].block, kernels[i][k].shared_bytes};
    };
    CUdeviceptr px = dx.ptr(), pw1 = dw1.ptr(), pb1 = db1.ptr(), pnull = 0, py = dy.ptr(),
                pw2 = dw2.ptr(), pb2 = db2.ptr(), pmid = dmid.ptr();
    // The b2b parameters after the common six (tc_conv_template.h).
    void* fused_args[] = {&px, &pw1, &pb1, &pnull, &py, &pnull, &pw2, &pb2};
    void* first_args[] = {&px, &pw1, &pb1, &pnull, &pmid, &pnull};
    const Tensor w2_1x1 = TensorCoreConvTemplate::pack_weights(b, t.b2b->w.data<float>());
    rt::DeviceBuffer dw2u(w2_1x1.nbytes());
    dw2u.upload(w2_1x1.raw());
    CUdeviceptr pw2u = dw2u.ptr();
    void* second_args[] = {&pmid, &pw2u, &pb2, &pnull, &py, &pnull};
    rt::launch(fns[0], dims(0), fused_args, &stream);
    stream.synchronize();
    dy.download(y.data());
    EXPECT_TRUE(check_output(b, y, want, 0x5a));
    for (const auto& [config, k] : wgmma[i]) {
      SCOPED_TRACE(config);
      std::vector<uint8_t> yw(y.size(), 0x5a);
      dy.upload(yw.data());
      rt::launch(kernel_function(module, k), rt::LaunchDims{k.grid, k.block, k.shared_bytes},
                 fused_args, &stream);
      stream.synchronize();
      dy.download(yw.data());
      EXPECT_TRUE(check_output(b, yw, want, 0x5a));
    }
    // The unfused pair gives the same (up to the intermediate's rounding of different sums).
    std::vector<uint8_t> y2(y.size(), 0x5a);
    dy.upload(y2.data());
    rt::launch(fns[1], dims(1), first_args, &stream);
    rt::launch(fns[2], dims(2), second_args, &stream);
    stream.synchronize();
    dy.download(y2.data());
    EXPECT_TRUE(check_output(b, y2, want, 0x5a));
    const double fused = time_us(stream, [&] { rt::launch(fns[0], dims(0), fused_args, &stream); });
    const double first = time_us(stream, [&] { rt::launch(fns[1], dims(1), first_args, &stream); });
    const double second =
        time_us(stream, [&] { rt::launch(fns[2], dims(2), second_args, &stream); });
    const double both = time_us(stream, [&] {
      rt::launch(fns[1], dims(1), first_args, &stream);
      rt::launch(fns[2], dims(2), second_args, &stream);
    });
    fused_total += fused;
    unfused_total += both;
    std::printf("[b2b] %-52s fused %-44s %7.2f us | unfused %7.2f + %7.2f = %7.2f us in a row\n",
                layers[i].what,
                TensorCoreConvTemplate::default_config(t).str().c_str(), fused, first, second,
                both);
  }
  std::printf("[b2b] all %zu pairs: fused %.2f us, unfused %.2f us\n", layers.size(), fused_total,
              unfused_total);
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
