// GPU tests of detection pre- and post-processing (label gpu; they skip without a CUDA device):
// the emitted kernels run through runtime/cuda/gpu_detect against src/detect:
//   - pre-processing of bus.jpg and zidane.jpg (batch 2 in one launch) equal to
//     preprocess_ultralytics / preprocess_yolox (f32 and f16 bit for bit, bf16 = the f32 result
//     rounded), NCHW and NHWC, frames copied or read in place (zero copy);
//   - decode + NMS of real heads (yolov8n, yolov5n fp16, yolov10n, yolox-nano on both images, made
//     by tests/cuda/make_detect_heads.py) and of synthetic ones (ties, > kMaxNmsCandidates
//     candidates) equal to decode_head + nms: same boxes, scores, classes, order;
//   - the whole pre + post captured in one CUDA graph and replayed, with [timing] lines.
// Test data: $YOLOC_GPU_TEST_DATA, else the folder `data` beside the binary (build/cuda_gpu/data):
// bus.jpg, zidane.jpg, {yolov8,yolov5,yolov10,yolox}_{bus,zidane}_head.npy.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/detect_kernels.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "core/error.h"
#include "core/npy.h"
#include "detect/decode.h"
#include "yoloc/image.h"
#include "detect/nms.h"
#include "detect/preprocess.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/gpu_detect.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;
using detect::Family;

rt::Context* detect_context() {
  static std::unique_ptr<rt::Context> ctx = []() -> std::unique_ptr<rt::Context> {
    if (rt::device_count_or_zero() == 0) return nullptr;
    auto c = std::make_unique<rt::Context>(0);
    std::printf("[device] %s, %s, NVRTC %s\n", c->info().name.c_str(), c->info().arch().c_str(),
                nvrtc_version().c_str());
    return c;
  }();
  if (ctx) ctx->make_current();
  return ctx.get();
}

#define YOLOC_REQUIRE_GPU()                                                          \
  if (detect_context() == nullptr) {                                                 \
    GTEST_SKIP() << "no CUDA device (no libcuda.so.1, or no GPU): GPU test skipped"; \
  }

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("YOLOC_GPU_TEST_DATA")) return env;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "data";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path() / "data";
}

#define YOLOC_REQUIRE_DATA(file)                                                                \
  if (!std::filesystem::exists(data_dir() / (file))) {                                          \
    GTEST_SKIP() << "no " << (data_dir() / (file)).string()                                     \
                 << " (set YOLOC_GPU_TEST_DATA, or copy the files into the data folder beside " \
                    "the binary; tests/cuda/make_detect_heads.py makes the heads)";             \
  }

// The emitted kernels of one config, built for the device and loaded.
struct Built {
  DetectKernels kernels;
  std::unique_ptr<rt::Module> module;
};

Built build(const DetectKernelConfig& c) {
  Built b;
  b.kernels = emit_detect_kernels(c);
  NvrtcOptions opts;
  opts.arch = detect_context()->info().arch();
  b.module = std::make_unique<rt::Module>(nvrtc_compile(b.kernels.source, c.prefix, opts).cubin);
  return b;
}

// --- pre-processing ---------------------------------------------------------------------------

// The CPU's pre-processed input of img as `dtype` (bf16: the float32 result rounded).
Tensor cpu_input(const detect::Image& img, Family f, int w, int h, DType dtype) {
  const DType cpu_dtype = dtype == DType::kBFloat16 ? DType::kFloat32 : dtype;
  Tensor t = f == Family::kYoloX ? detect::preprocess_yolox(img, w, h, cpu_dtype).input
                                 : detect::preprocess_ultralytics(img, w, h, cpu_dtype).input;
  return dtype == DType::kBFloat16 ? t.cast(DType::kBFloat16) : t;
}

float element(const uint8_t* p, DType t, int64_t i) {
  if (t == DType::kFloat32) return reinterpret_cast<const float*>(p)[i];
  if (t == DType::kFloat16) return static_cast<float>(reinterpret_cast<const Half*>(p)[i]);
  return static_cast<float>(reinterpret_cast<const BFloat16*>(p)[i]);
}

struct PreCase {
  Family family;
  int size;
  DType dtype;
  bool nhwc;
  rt::FrameSource source;
};

void run_pre_case(const PreCase& pc) {
  const detect::Image images[] = {detect::read_image((data_dir() / "bus.jpg").string()),
                                  detect::read_image((data_dir() / "zidane.jpg").string())};
  const int s = pc.size;
  DetectKernelConfig c;
  c.family = pc.family;
  c.input_w = c.input_h = s;
  c.input_dtype = pc.dtype;
  c.input_strides = pc.nhwc ? nhwc_strides(s, s) : nchw_strides(s, s);
  const int64_t anchors = (s / 8) * (s / 8) + (s / 16) * (s / 16) + (s / 32) * (s / 32);
  c.head_shape = {2, anchors, 85};
  if (pc.family == Family::kYoloV8) c.head_shape = {2, 84, anchors};
  c.prefix = "pre";
  const Built b = build(c);
  const size_t elem = dtype_size(pc.dtype);
  const size_t item = static_cast<size_t>(3) * s * s;
  rt::DeviceBuffer input(2 * item * elem), head(2 * 85 * anchors * 4);
  input.fill_bytes(0xff);
  head.fill_bytes(0);
  rt::GpuDetect det(*b.module, b.kernels.spec, input.ptr(), head.ptr(), 1920, 1080, pc.source);
  det.set_frame(0, images[0]);
  det.set_frame(1, images[1]);
  rt::Stream stream;
  det.enqueue_preprocess(stream);
  stream.synchronize();
  std::vector<uint8_t> got(input.bytes());
  input.download(got.data());
  for (int bi = 0; bi < 2; ++bi) {
    const Tensor want = cpu_input(images[bi], pc.family, s, s, pc.dtype);
    const auto* w = static_cast<const uint8_t*>(want.raw());
    const uint8_t* g = got.data() + bi * item * elem;
    size_t diff = 0;
    double max_abs = 0;
    int64_t first = -1;
    for (int ch = 0; ch < 3; ++ch)
      for (int y = 0; y < s; ++y)
        for (int x = 0; x < s; ++x) {
          const int64_t wi = (static_cast<int64_t>(ch) * s + y) * s + x;
          const int64_t gi = pc.nhwc ? (static_cast<int64_t>(y) * s + x) * 3 + ch : wi;
          if (std::memcmp(w + wi * elem, g + gi * elem, elem) != 0) {
            ++diff;
            if (first < 0) first = wi;
            max_abs = std::max<double>(
                max_abs, std::fabs(element(w, pc.dtype, wi) - element(g, pc.dtype, gi)));
          }
        }
    std::printf(
        "[pre] %s %dx%d %s %s %s item %d (%s %dx%d): %zu of %zu elements differ, max abs "
        "diff %g\n",
        std::string(family_name(pc.family)).c_str(), s, s, short_dtype_name(pc.dtype),
        pc.nhwc ? "nhwc" : "nchw",
        pc.source == rt::FrameSource::kZeroCopy ? "zero-copy" : "device-copy", bi,
        bi == 0 ? "bus" : "zidane", images[bi].width, images[bi].height, diff, item, max_abs);
    EXPECT_EQ(diff, 0u) << "item " << bi << ": first differing element (c, y, x) = ("
                        << first / (s * s) << ", " << first / s % s << ", " << first % s
                        << "), max abs diff " << max_abs;
  }
}

class DetectGpuPre : public ::testing::TestWithParam<PreCase> {};

TEST_P(DetectGpuPre, EqualsCpuPreprocessing) {
  YOLOC_REQUIRE_GPU();
  YOLOC_REQUIRE_DATA("bus.jpg");
  YOLOC_REQUIRE_DATA("zidane.jpg");
  run_pre_case(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Frames, DetectGpuPre,
    ::testing::Values(
        PreCase{Family::kYoloV8, 640, DType::kFloat32, false, rt::FrameSource::kDeviceCopy},
        PreCase{Family::kYoloV8, 640, DType::kFloat32, false, rt::FrameSource::kZeroCopy},
        PreCase{Family::kYoloV8, 640, DType::kFloat16, false, rt::FrameSource::kDeviceCopy},
        PreCase{Family::kYoloV8, 640, DType::kBFloat16, false, rt::FrameSource::kDeviceCopy},
        PreCase{Family::kYoloV8, 320, DType::kFloat16, true, rt::FrameSource::kDeviceCopy},
        PreCase{Family::kYoloX, 416, DType::kFloat32, false, rt::FrameSource::kDeviceCopy},
        PreCase{Family::kYoloX, 416, DType::kFloat16, true, rt::FrameSource::kZeroCopy}),
    [](const auto& info) {
      const PreCase& p = info.param;
      return fmt::format("{}_{}_{}_{}_{}", family_name(p.family), p.size, short_dtype_name(p.dtype),
                         p.nhwc ? "nhwc" : "nchw",
                         p.source == rt::FrameSource::kZeroCopy ? "zerocopy" : "copy");
    });

// --- post-processing --------------------------------------------------------------------------

// The CPU pipeline's post-processing in network-input pixels (Detector::postprocess less the
// mapping).
std::vector<detect::Detection> cpu_post(Family f, const Tensor& head, float conf, float iou,
                                        int max_det, int w, int h) {
  std::vector<detect::Detection> dets = detect::decode_head(f, head, conf, w, h);
  if (f != Family::kYoloV10) return detect::nms(std::move(dets), iou, max_det);
  std::stable_sort(dets.begin(), dets.end(),
                   [](const auto& a, const auto& b) { return a.score > b.score; });
  if (dets.size() > static_cast<size_t>(max_det)) dets.resize(static_cast<size_t>(max_det));
  return dets;
}

std::string describe(const detect::Detection& d) {
  return fmt::format("[{:.9g} {:.9g} {:.9g} {:.9g}] {:.9g} class {}", d.box.x1, d.box.y1, d.box.x2,
                     d.box.y2, d.score, d.class_id);
}

// Equal detections. YOLOX boxes go through exp: glibc's expf is not correctly rounded in about 1
// case of 2000 (and has an FMA variant), the kernels' exp is, so their corners may differ by a
// few ulps (`box_tol`, relative); scores, classes and order must be equal.
bool same(const detect::Detection& a, const detect::Detection& b, float box_tol = 0.0f) {
  const auto near = [box_tol](float x, float y) {
    return x == y || std::fabs(x - y) <= box_tol * std::max(1.0f, std::fabs(y));
  };
  return near(a.box.x1, b.box.x1) && near(a.box.y1, b.box.y1) && near(a.box.x2, b.box.x2) &&
         near(a.box.y2, b.box.y2) && a.score == b.score && a.class_id == b.class_id;
}

float box_tolerance(Family f) { return f == Family::kYoloX ? 1e-5f : 0.0f; }

// Runs post-processing on `head` (batch 1) and compares with the CPU for several thresholds.
void check_post(const std::string& what, Family f, const Tensor& head, int w, int h,
                int max_det_cap, const std::vector<std::tuple<float, float, int>>& thresholds) {
  DetectKernelConfig c;
  c.family = f;
  c.input_w = w;
  c.input_h = h;
  c.head_shape = {head.dim(0), head.dim(1), head.dim(2)};
  c.head_dtype = head.dtype();
  c.max_det_cap = max_det_cap;
  c.prefix = "post";
  const Built b = build(c);
  rt::DeviceBuffer input(static_cast<size_t>(3) * w * h * 4), dhead(head.nbytes());
  dhead.upload(head.raw());
  rt::GpuDetect det(*b.module, b.kernels.spec, input.ptr(), dhead.ptr(), 64, 64);
  rt::Stream stream;
  for (auto [conf, iou, max_det] : thresholds) {
    SCOPED_TRACE(fmt::format("{} conf {} iou {} max_det {}", what, conf, iou, max_det));
    det.set_thresholds(conf, iou, max_det);
    // Twice: the second run checks that the first left the counters at zero.
    for (int run = 0; run < 2; ++run) {
      det.enqueue_postprocess(stream);
      stream.synchronize();
      const std::vector<detect::Detection> got = det.raw_detections(0);
      const std::vector<detect::Detection> want = cpu_post(f, head, conf, iou, max_det, w, h);
      if (run == 0)
        std::printf(
            "[post] %s conf %g iou %g max_det %d: %zu candidates -> GPU %zu, CPU %zu "
            "detections\n",
            what.c_str(), conf, iou, max_det, detect::decode_head(f, head, conf, w, h).size(),
            got.size(), want.size());
      ASSERT_EQ(got.size(), want.size()) << "run " << run;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_TRUE(same(got[i], want[i], box_tolerance(f)))
            << "run " << run << ", detection " << i << ": GPU " << describe(got[i]) << ", CPU "
            << describe(want[i]);
    }
  }
}

struct RealHead {
  Family family;
  const char* name;
  int size;
};

class DetectGpuPost : public ::testing::TestWithParam<RealHead> {};

TEST_P(DetectGpuPost, RealHeadsEqualCpuDecodeAndNms) {
  YOLOC_REQUIRE_GPU();
  const RealHead& r = GetParam();
  for (const char* image : {"bus", "zidane"}) {
    const std::string file = fmt::format("{}_{}_head.npy", r.name, image);
    YOLOC_REQUIRE_DATA(file);
    const Tensor head = read_npy((data_dir() / file).string());
    check_post(file, r.family, head, r.size, r.size, 300,
               {{0.25f, 0.45f, 300}, {0.001f, 0.7f, 300}, {0.1f, 0.3f, 5}});
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DetectGpuPost,
                         ::testing::Values(RealHead{Family::kYoloV8, "yolov8", 640},
                                           RealHead{Family::kYoloV5, "yolov5", 640},
                                           RealHead{Family::kYoloV10, "yolov10", 640},
                                           RealHead{Family::kYoloX, "yolox", 416}),
                         [](const auto& info) { return std::string(info.param.name); });

// A v8 head of n anchors, 3 classes: boxes in clusters (so NMS suppresses), scores with many
// exact ties, all above 0.
Tensor synthetic_v8(int64_t n, uint32_t seed) {
  Tensor t(DType::kFloat32, {1, 7, n});
  float* p = t.data<float>();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float cx = 40.0f * static_cast<float>(rng() % 16),
                cy = 40.0f * static_cast<float>(rng() % 16);
    p[i] = cx + 10.0f * u(rng);
    p[n + i] = cy + 10.0f * u(rng);
    p[2 * n + i] = 20.0f + 40.0f * u(rng);
    p[3 * n + i] = 20.0f + 40.0f * u(rng);
    for (int c = 0; c < 3; ++c)
      p[(4 + c) * n + i] = (rng() % 4 == 0) ? 0.5f : 0.01f + 0.98f * u(rng);
  }
  return t;
}

TEST(DetectGpuPostSynthetic, TiesChunksAndTheCandidateCap) {
  YOLOC_REQUIRE_GPU();
  // 2000 anchors: many chunks of 256 candidates, many ties.
  check_post("synthetic v8 2000 anchors", Family::kYoloV8, synthetic_v8(2000, 1), 640, 640, 1000,
             {{0.0f, 0.45f, 1000}, {0.3f, 0.6f, 300}, {0.0f, 0.0f, 50}, {0.0f, 1.0f, 1000}});
  // 40000 anchors, all candidates: NMS sees only the best kMaxNmsCandidates.
  check_post("synthetic v8 40000 anchors", Family::kYoloV8, synthetic_v8(40000, 2), 640, 640, 1000,
             {{0.0f, 0.45f, 1000}, {0.0f, 0.0f, 1000}});
}

// --- the whole chain in one graph, and timing ---------------------------------------------------

struct Timing {
  double gpu_us = 0;   // per replay, from events around back-to-back replays
  double wall_us = 0;  // launch + synchronise, per replay, on the host
};

Timing time_graph(const rt::Graph& g, const rt::Stream& stream) {
  constexpr int kRuns = 200;
  for (int i = 0; i < 10; ++i) g.launch(stream);
  stream.synchronize();
  rt::Event start, stop;
  start.record(stream);
  for (int i = 0; i < kRuns; ++i) g.launch(stream);
  stop.record(stream);
  stop.synchronize();
  Timing t;
  t.gpu_us = 1000.0 * stop.elapsed_ms_since(start) / kRuns;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) {
    g.launch(stream);
    stream.synchronize();
  }
  t.wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      kRuns;
  return t;
}

void graph_case(Family f, const char* name, int size, const char* image, rt::FrameSource source) {
  const std::string file = fmt::format("{}_{}_head.npy", name, image);
  YOLOC_REQUIRE_DATA(file);
  const Tensor head = read_npy((data_dir() / file).string());
  const detect::Image img =
      detect::read_image((data_dir() / (std::string(image) + ".jpg")).string());
  DetectKernelConfig c;
  c.family = f;
  c.input_w = c.input_h = size;
  c.head_shape = {1, head.dim(1), head.dim(2)};
  c.head_dtype = head.dtype();
  c.prefix = "graph";
  const Built b = build(c);
  rt::DeviceBuffer input(static_cast<size_t>(3) * size * size * 4), dhead(head.nbytes());
  dhead.upload(head.raw());
  rt::GpuDetect det(*b.module, b.kernels.spec, input.ptr(), dhead.ptr(), 1920, 1080, source);
  det.set_frame(0, img);
  rt::Stream stream;
  stream.begin_capture();
  det.enqueue_preprocess(stream);
  det.enqueue_postprocess(stream);
  const rt::Graph whole = stream.end_capture();
  stream.begin_capture();
  det.enqueue_preprocess(stream);
  const rt::Graph pre = stream.end_capture();
  stream.begin_capture();
  det.enqueue_postprocess(stream);
  const rt::Graph post = stream.end_capture();

  // Replays with the same frame give the CPU's detections (on the image, mapped back), and the
  // CPU's network input.
  const detect::Preprocessed want_in =
      f == Family::kYoloX ? detect::preprocess_yolox(img, size, size, DType::kFloat32)
                          : detect::preprocess_ultralytics(img, size, size, DType::kFloat32);
  std::vector<detect::Detection> want = cpu_post(f, head, 0.25f, 0.45f, 300, size, size);
  detect::map_to_image(want, want_in.transform, img.width, img.height);
  for (int replay = 0; replay < 2; ++replay) {
    whole.launch(stream);
    stream.synchronize();
    std::vector<float> got_in(static_cast<size_t>(3) * size * size);
    input.download(got_in.data());
    EXPECT_EQ(std::memcmp(got_in.data(), want_in.input.raw(), input.bytes()), 0)
        << "replay " << replay << ": network input differs from the CPU's";
    const std::vector<detect::Detection> got = det.detections(0);
    ASSERT_EQ(got.size(), want.size()) << "replay " << replay;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(same(got[i], want[i], box_tolerance(f)))
          << "replay " << replay << ", detection " << i << ": GPU " << describe(got[i]) << ", CPU "
          << describe(want[i]);
  }
  const Timing tp = time_graph(pre, stream), tq = time_graph(post, stream),
               tw = time_graph(whole, stream);
  std::printf(
      "[timing] detect %-8s %s %dx%d -> %dx%d, %zu detections, %s: pre %.1f us, post "
      "%.1f us, pre+post graph %.1f us (GPU time per replay); launch+sync wall %.1f / "
      "%.1f / %.1f us\n",
      name, image, img.width, img.height, size, size, want.size(),
      source == rt::FrameSource::kZeroCopy ? "zero-copy frame" : "device-copy frame", tp.gpu_us,
      tq.gpu_us, tw.gpu_us, tp.wall_us, tq.wall_us, tw.wall_us);
}

TEST(DetectGpuGraph, WholeChainReplaysAndTiming) {
  YOLOC_REQUIRE_GPU();
  YOLOC_REQUIRE_DATA("bus.jpg");
  YOLOC_REQUIRE_DATA("zidane.jpg");
  for (rt::FrameSource source : {rt::FrameSource::kDeviceCopy, rt::FrameSource::kZeroCopy}) {
    graph_case(Family::kYoloV8, "yolov8", 640, "bus", source);
    graph_case(Family::kYoloV8, "yolov8", 640, "zidane", source);
    graph_case(Family::kYoloX, "yolox", 416, "bus", source);
  }
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
