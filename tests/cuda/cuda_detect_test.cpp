// The GPU detection kernels without a GPU: every family x input dtype x head dtype builds with
// NVRTC for sm_80 and sm_90 (with every symbol of the spec in the PTX), the spec's geometry and
// the config errors; and the kernels' per-element arithmetic (detect_device_functions, compiled
// by the host compiler) equals src/detect: pre-processing of whole images bit for bit, the
// per-row decoders against decode_head, the IoU against detect::iou.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <random>

#include "artifact/cuda_detect_params.h"
#include "codegen/cpu/host_compiler.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/detect_kernels.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "core/error.h"
#include "detect/decode.h"
#include "detect/nms.h"
#include "detect/preprocess.h"
#include "runtime/cuda/gpu_detect.h"
#include "runtime/kernel_library.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;
using detect::Family;

// A head shape of each family for a w x h input (YOLOX: the grid's rows).
std::array<int64_t, 3> head_shape(Family f, int w, int h, int batch, int classes) {
  const int64_t anchors =
      static_cast<int64_t>(w / 8) * (h / 8) + (w / 16) * (h / 16) + (w / 32) * (h / 32);
  switch (f) {
    case Family::kYoloV8: return {batch, 4 + classes, anchors};
    case Family::kYoloV5: return {batch, 3 * anchors, 5 + classes};
    case Family::kYoloX: return {batch, anchors, 5 + classes};
    case Family::kYoloV10: return {batch, 300, 6};
  }
  return {};
}

class DetectNvrtc : public ::testing::TestWithParam<Family> {};

TEST_P(DetectNvrtc, EveryDtypeBuildsForSm80AndSm90) {
  const Family family = GetParam();
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  // Every input x head dtype at 640 (NCHW, batch 1, max_det 300), plus NHWC with batch 2 and
  // another size and cap: one module, so the shared part must be guarded.
  std::string source;
  std::vector<std::string> symbols;
  int n = 0;
  const auto add = [&](DetectKernelConfig c) {
    c.prefix = fmt::format("det{}", n++);
    const DetectKernels k = emit_detect_kernels(c);
    source += k.source;
    for (const auto* l : {&k.spec.pre, &k.spec.decode, &k.spec.rank, &k.spec.nms})
      symbols.push_back(l->symbol);
  };
  for (DType in : dtypes) {
    for (DType head : dtypes) {
      DetectKernelConfig c;
      c.family = family;
      c.input_dtype = in;
      c.head_dtype = head;
      c.head_shape = head_shape(family, 640, 640, 1, 80);
      add(c);
    }
  }
  DetectKernelConfig c;
  c.family = family;
  c.input_w = 416;
  c.input_h = 256;
  c.input_strides = nhwc_strides(416, 256);
  c.input_dtype = DType::kFloat16;
  c.head_shape = head_shape(family, 416, 256, 2, 3);
  c.max_det_cap = 1000;
  add(c);
  for (const char* arch : {"sm_80", "sm_90"}) {
    NvrtcOptions opts;
    opts.arch = arch;
    const CompiledModule m =
        nvrtc_compile(source, fmt::format("detect_{}", family_name(family)), opts);
    EXPECT_FALSE(m.cubin.empty());
    for (const std::string& s : symbols)
      EXPECT_NE(m.ptx.find(".entry " + s + "("), std::string::npos) << s << " for " << arch;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DetectNvrtc,
                         ::testing::Values(Family::kYoloV5, Family::kYoloV8, Family::kYoloV10,
                                           Family::kYoloX),
                         [](const auto& info) { return std::string(family_name(info.param)); });

TEST(DetectKernels, SpecGeometryAndLayout) {
  DetectKernelConfig c;
  c.head_shape = {2, 84, 8400};
  c.max_det_cap = 100;
  const rt::GpuDetectSpec s = emit_detect_kernels(c).spec;
  EXPECT_EQ(s.batch, 2);
  EXPECT_EQ(s.pre.symbol, "yc_detect_pre");
  EXPECT_EQ(s.nms.symbol, "yc_detect_nms");
  // 640 * 640 / 256 = 1600 blocks a frame; ceil(8400 / 256) = 33 anchors' blocks.
  EXPECT_EQ(s.pre.dims.grid, (std::array<unsigned, 3>{1600, 2, 1}));
  EXPECT_EQ(s.decode.dims.grid, (std::array<unsigned, 3>{33, 2, 1}));
  EXPECT_EQ(s.rank.dims.grid, (std::array<unsigned, 3>{33, 2, 1}));
  EXPECT_EQ(s.nms.dims.grid, (std::array<unsigned, 3>{2, 1, 1}));
  EXPECT_EQ(s.pre.dims.block, (std::array<unsigned, 3>{256, 1, 1}));
  // Counts (2 ints, padded to 16) then 2 x 100 detections of 24 bytes.
  EXPECT_EQ(s.result_dets_offset, 16u);
  EXPECT_EQ(s.result_bytes, 16u + 2 * 100 * 24);
  // Counters (256) + keys 2 x 8400 x 8 + candidates and sorted 2 x 8400 x 24 each, 256-aligned.
  EXPECT_GE(s.workspace_bytes, 256u + 2 * 8400 * 8 + 2 * 2 * 8400 * 24);
}

TEST(DetectKernels, ConfigErrorsSayWhatIsExpected) {
  const auto error = [](DetectKernelConfig c) {
    try {
      emit_detect_kernels(c);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  DetectKernelConfig c;
  c.family = Family::kYoloV8;
  c.head_shape = {1, 3, 8400};
  EXPECT_NE(error(c).find("(B, 4+C, N)"), std::string::npos) << error(c);
  c.family = Family::kYoloV10;
  c.head_shape = {1, 300, 7};
  EXPECT_NE(error(c).find("(B, K, 6)"), std::string::npos) << error(c);
  c.family = Family::kYoloX;
  c.input_w = c.input_h = 416;
  c.head_shape = {1, 8400, 85};
  EXPECT_NE(error(c).find("3549 grid cells"), std::string::npos) << error(c);
  c.input_w = 400;
  EXPECT_NE(error(c).find("multiple of 32"), std::string::npos) << error(c);
  c = {};
  c.head_shape = {1, 84, 8400};
  c.max_det_cap = 0;
  EXPECT_NE(error(c).find("max_det 0"), std::string::npos) << error(c);
  c.max_det_cap = 300;
  c.input_dtype = DType::kInt8;
  EXPECT_NE(error(c).find("int8"), std::string::npos) << error(c);
}

// --- host check of the arithmetic -------------------------------------------------------------

// The prelude's device part and the rounding helpers on the host (plain IEEE operations, no
// contraction), then the device functions, then loops over them.
constexpr const char* kHostPrelude = R"(#define YOLOC_CUDA_DEVICE_PRELUDE
#define YOLOC_DETECT_DEVICE_OPS
#include <cmath>
#include <cstring>
#define YC_DEVICE inline
typedef unsigned short yc_u16;
typedef unsigned int yc_u32;
typedef long long yc_i64;
inline float yc_half_to_float(yc_u16 h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}
inline yc_u16 yc_float_to_half(float f) {
  const _Float16 v = static_cast<_Float16>(f);
  yc_u16 h;
  std::memcpy(&h, &v, 2);
  return h;
}
inline float yc_bf16_to_float(yc_u16 h) {
  const yc_u32 u = static_cast<yc_u32>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline yc_u16 yc_float_to_bf16(float f) {
  yc_u32 u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<yc_u16>(u >> 16);
}
inline float yc_exp(float x) { return std::exp(x); }
inline float yc_exp_fast(float x) { return std::exp(x); }
inline float yc_div_fast(float x, float y) { return x / y; }
inline float yc_tanh_fast(float x) { return std::tanh(x); }
inline float yc_fadd(float a, float b) { return a + b; }
inline float yc_fsub(float a, float b) { return a - b; }
inline float yc_fmul(float a, float b) { return a * b; }
inline float yc_fdiv(float a, float b) { return a / b; }
inline double yc_dadd(double a, double b) { return a + b; }
inline double yc_dmul(double a, double b) { return a * b; }
inline double yc_ddiv(double a, double b) { return a / b; }
inline float yc_floorf(float v) { return std::floor(v); }
inline float yc_rintf(float v) { return std::nearbyint(v); }
inline float yc_expf_rn(float v) { return static_cast<float>(std::exp(static_cast<double>(v))); }
inline unsigned yc_float_bits(float v) {
  unsigned u;
  std::memcpy(&u, &v, 4);
  return u;
}
)";

constexpr const char* kHostLoops = R"(
#define YC_EXPORT extern "C" __attribute__((visibility("default")))
YC_EXPORT void host_preprocess(const unsigned char* frame, const YcImageParams* g, int w, int h,
                               int to_rgb, float* out) {
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float v[3];
      yc_preprocess_pixel(frame, *g, x, y, to_rgb != 0, to_rgb ? 255.0f : 1.0f, v);
      for (int c = 0; c < 3; ++c) out[(static_cast<long long>(c) * h + y) * w + x] = v[c];
    }
}
// family 0 v5, 1 v8, 2 v10, 3 YOLOX; d1, d2 the head item's dims; returns the candidates.
YC_EXPORT int host_decode(int family, const float* p, int d1, int d2, int w, int h, float conf,
                          YcDetection* out) {
  int n = 0;
  const int rows = family == 1 ? d2 : d1;
  for (int i = 0; i < rows; ++i) {
    YcDetection d;
    bool hit;
    if (family == 1) {
      hit = yc_decode_v8(p, d2, d1 - 4, i, conf, d);
    } else if (family == 2) {
      hit = yc_decode_v10(p, i, conf, d);
    } else if (family == 3) {
      float gx = 0, gy = 0, s = 0;
      hit = yc_yolox_cell(i, w, h, gx, gy, s) && yc_decode_rows(p, d2, i, true, gx, gy, s, conf, d);
    } else {
      hit = yc_decode_rows(p, d2, i, false, 0.0f, 0.0f, 0.0f, conf, d);
    }
    if (hit) out[n++] = d;
  }
  return n;
}
YC_EXPORT float host_iou(const YcDetection* a, const YcDetection* b) { return yc_iou(*a, *b); }
YC_EXPORT unsigned long long host_sort_key(float score, int row) { return yc_sort_key(score, row); }
)";

class HostFunctions {
 public:
  HostFunctions() : lib_(build()) {}
  void preprocess(const uint8_t* frame, const rt::YcImageParams& g, int w, int h, bool to_rgb,
                  float* out) const {
    fn<void (*)(const uint8_t*, const rt::YcImageParams*, int, int, int, float*)>(
        "host_preprocess")(frame, &g, w, h, to_rgb, out);
  }
  std::vector<rt::YcDetection> decode(int family, const Tensor& head, int w, int h,
                                      float conf) const {
    const Tensor f = head.dtype() == DType::kFloat32 ? head : head.cast(DType::kFloat32);
    const int d1 = static_cast<int>(f.dim(1)), d2 = static_cast<int>(f.dim(2));
    std::vector<rt::YcDetection> out(static_cast<size_t>(std::max(d1, d2)));
    const int n = fn<int (*)(int, const float*, int, int, int, int, float, rt::YcDetection*)>(
        "host_decode")(family, f.data<float>(), d1, d2, w, h, conf, out.data());
    out.resize(static_cast<size_t>(n));
    return out;
  }
  float iou(const rt::YcDetection& a, const rt::YcDetection& b) const {
    return fn<float (*)(const rt::YcDetection*, const rt::YcDetection*)>("host_iou")(&a, &b);
  }
  uint64_t sort_key(float score, int row) const {
    return fn<unsigned long long (*)(float, int)>("host_sort_key")(score, row);
  }

 private:
  template <typename F>
  F fn(const char* name) const {
    return reinterpret_cast<F>(lib_.symbol(name));
  }
  static std::string build() {
    const std::string source =
        std::string(kHostPrelude) + kCudaCommonPrelude + detect_device_functions() + kHostLoops;
    cpu::HostCompilerOptions opts;
    opts.flags = {"-O1",     "-std=c++17",        "-fPIC",
                  "-shared", "-ffp-contract=off", "-fvisibility=hidden"};
    return cpu::compile_shared_object(source, opts).bytes;
  }
  runtime::KernelLibrary lib_;
};

const HostFunctions& host() {
  static const HostFunctions h;
  return h;
}

// A w x h BGR image of smooth gradients plus noise (both matter to a bilinear resize).
detect::Image test_image(int w, int h, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-40, 40);
  detect::Image img(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const int v = (x * (c + 1) * 255 / w + y * 255 / h) / 2 + noise(rng);
        img.pixel(x, y)[c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
  return img;
}

// The device function's pre-processing of img (family f) against the CPU's, element for element.
void expect_preprocess_equal(const detect::Image& img, Family f, int dst_w, int dst_h) {
  const rt::FramePlacement p = rt::frame_placement(f, img.width, img.height, dst_w, dst_h);
  rt::YcImageParams g{};
  g.src_w = img.width;
  g.src_h = img.height;
  g.src_pitch = img.width * 3;
  g.new_w = p.new_w;
  g.new_h = p.new_h;
  g.left = p.left;
  g.top = p.top;
  const bool yolox = f == Family::kYoloX;
  const detect::Preprocessed want =
      yolox ? detect::preprocess_yolox(img, dst_w, dst_h, DType::kFloat32)
            : detect::preprocess_ultralytics(img, dst_w, dst_h, DType::kFloat32);
  std::vector<float> got(static_cast<size_t>(3) * dst_w * dst_h);
  host().preprocess(img.bgr.data(), g, dst_w, dst_h, !yolox, got.data());
  const float* w = want.input.data<float>();
  size_t diff = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &w[i], 4) != 0) diff++, first = std::min(first, i);
  EXPECT_EQ(diff, 0u) << img.width << "x" << img.height << " -> " << dst_w << "x" << dst_h
                      << ": first at " << first << " got " << got[std::min(first, got.size() - 1)]
                      << " want " << w[std::min(first, got.size() - 1)];
  EXPECT_EQ(want.transform.scale, p.transform.scale);
  EXPECT_EQ(want.transform.pad_left, p.transform.pad_left);
  EXPECT_EQ(want.transform.pad_top, p.transform.pad_top);
}

TEST(DetectHostArithmetic, PreprocessingEqualsCpuBitForBit) {
  // Down- and up-scaling, odd sizes, a same-size frame, both placements.
  const std::pair<int, int> sizes[] = {{810, 1080}, {1280, 720}, {333, 517}, {200, 150},
                                       {640, 640},  {641, 3},    {1, 1}};
  uint32_t seed = 1;
  for (auto [w, h] : sizes) {
    const detect::Image img = test_image(w, h, seed++);
    expect_preprocess_equal(img, Family::kYoloV8, 640, 640);
    expect_preprocess_equal(img, Family::kYoloX, 416, 416);
    expect_preprocess_equal(img, Family::kYoloV8, 320, 256);
  }
}

TEST(DetectHostArithmetic, PreprocessingOfSharedImages) {
  const char* env = std::getenv("YOLOC_SHARED_DIR");
  const std::filesystem::path dir =
      std::filesystem::path(env ? env : "/work/shared") / "data" / "images";
  if (!std::filesystem::exists(dir / "bus.jpg"))
    GTEST_SKIP() << "no " << (dir / "bus.jpg") << " (set YOLOC_SHARED_DIR)";
  for (const char* name : {"bus.jpg", "zidane.jpg"}) {
    SCOPED_TRACE(name);
    const detect::Image img = detect::read_image((dir / name).string());
    expect_preprocess_equal(img, Family::kYoloV8, 640, 640);
    expect_preprocess_equal(img, Family::kYoloX, 416, 416);
  }
}

// A head of `family` whose scores are spread around the threshold, with ties and a few
// degenerate boxes; v8's classes on axis 1, the others' on axis 2.
Tensor random_head(Family family, int w, int h, uint32_t seed) {
  const std::array<int64_t, 3> s = head_shape(family, w, h, 1, 7);
  Tensor t(DType::kFloat32, {s[0], s[1], s[2]});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  float* p = t.data<float>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    float v = u(rng);
    if (v < 0.1f) v = 0.5f;  // ties
    p[i] = v;
  }
  if (family == Family::kYoloV8 || family == Family::kYoloV5) {
    for (int64_t i = 0; i < n; ++i) p[i] *= 600.0f;  // boxes in pixels...
    const bool v8 = family == Family::kYoloV8;
    for (int64_t r = 0; r < (v8 ? s[2] : s[1]); ++r)
      for (int64_t c = 4; c < (v8 ? s[1] : s[2]); ++c) {
        float& v = v8 ? p[c * s[2] + r] : p[r * s[2] + c];
        v /= 600.0f;  // ...scores in [0, 1]
      }
  } else if (family == Family::kYoloX) {
    for (int64_t r = 0; r < s[1]; ++r)
      for (int c = 0; c < 4; ++c) p[r * s[2] + c] = (p[r * s[2] + c] - 0.5f) * 4.0f;
  } else {
    for (int64_t r = 0; r < s[1]; ++r) {
      for (int c = 0; c < 4; ++c) p[r * 6 + c] *= 600.0f;
      p[r * 6 + 5] = std::floor(p[r * 6 + 5] * 7.0f);
    }
  }
  return t;
}

int code(Family f) {
  switch (f) {
    case Family::kYoloV5: return 0;
    case Family::kYoloV8: return 1;
    case Family::kYoloV10: return 2;
    case Family::kYoloX: return 3;
  }
  return -1;
}

TEST(DetectHostArithmetic, DecodersEqualDecodeHead) {
  for (Family f : {Family::kYoloV5, Family::kYoloV8, Family::kYoloV10, Family::kYoloX}) {
    for (float conf : {0.0f, 0.25f, 0.5f}) {
      SCOPED_TRACE(fmt::format("{} conf {}", family_name(f), conf));
      const Tensor head = random_head(f, 320, 256, 7);
      const std::vector<detect::Detection> want = detect::decode_head(f, head, conf, 320, 256);
      const std::vector<rt::YcDetection> got = host().decode(code(f), head, 320, 256, conf);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_GT(want.size(), 0u);
      for (size_t i = 0; i < got.size(); ++i) {
        const rt::YcDetection& g = got[i];
        const detect::Detection& d = want[i];
        // YOLOX boxes go through exp: glibc's expf is not correctly rounded in about 1 case
        // of 2000 (and has an FMA variant), the kernels' exp is, so those may differ by an ulp
        // of exp(x), a few ulps of the box.
        const float tol = f == Family::kYoloX ? 1e-5f : 0.0f;
        const auto near = [tol](float a, float b) {
          return a == b || std::fabs(a - b) <= tol * std::max(1.0f, std::fabs(b));
        };
        ASSERT_TRUE(near(g.x1, d.box.x1) && near(g.y1, d.box.y1) && near(g.x2, d.box.x2) &&
                    near(g.y2, d.box.y2) && g.score == d.score && g.class_id == d.class_id)
            << std::setprecision(9) << "candidate " << i << ": got " << g.x1 << " " << g.y1 << " "
            << g.x2 << " " << g.y2 << " " << g.score << " " << g.class_id << ", want " << d.box.x1
            << " " << d.box.y1 << " " << d.box.x2 << " " << d.box.y2 << " " << d.score << " "
            << d.class_id;
      }
    }
  }
}

TEST(DetectHostArithmetic, IouEqualsDetectIou) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-10.0f, 100.0f);
  for (int i = 0; i < 20000; ++i) {
    rt::YcDetection a{u(rng), u(rng), u(rng), u(rng), 0.5f, 0};
    rt::YcDetection b{u(rng), u(rng), u(rng), u(rng), 0.5f, 0};
    if (i % 3 == 0) b = {a.x1 + 1.0f, a.y1, a.x2 + 1.0f, a.y2, 0.5f, 0};  // overlapping
    const float want = detect::iou({a.x1, a.y1, a.x2, a.y2}, {b.x1, b.y1, b.x2, b.y2});
    ASSERT_EQ(host().iou(a, b), want) << i;
  }
}

TEST(DetectHostArithmetic, SortKeyOrdersByScoreThenRow) {
  const HostFunctions& h = host();
  EXPECT_GT(h.sort_key(0.9f, 5), h.sort_key(0.5f, 0));
  EXPECT_GT(h.sort_key(0.5f, 0), h.sort_key(0.5f, 1));  // ties: the earlier row first
  EXPECT_GT(h.sort_key(1e-30f, 9), h.sort_key(0.0f, 0));
  EXPECT_EQ(h.sort_key(-0.0f, 3), h.sort_key(0.0f, 3));  // -0 ties with +0
  EXPECT_GT(h.sort_key(0.0f, 3), h.sort_key(-1e-30f, 0));
  EXPECT_GT(h.sort_key(INFINITY, 100), h.sort_key(3e38f, 0));
}

// --- host emulation of the kernels --------------------------------------------------------------

// The kernels themselves on the host: each block's threads are std::threads with a barrier for
// __syncthreads (blocks one after the other, so __shared__ can be a function-local static), or run
// one after the other for the kernels that never synchronise (pre, decode). Checks the indexing,
// the candidate buffer, the rank sort and the chunked NMS where there is no GPU.
constexpr const char* kHostKernelPrelude = R"(
#include <barrier>
#include <thread>
#include <vector>
#define YC_KERNEL extern "C"
#define YC_LAUNCH_BOUNDS(n)
#define YC_KERNEL_ENTRY() ((void)0)
#define __restrict__ __restrict
#define __shared__ static
struct yc_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local yc_dim3 threadIdx, blockIdx;
inline std::barrier<>* yc_block_barrier = nullptr;
inline void __syncthreads() { yc_block_barrier->arrive_and_wait(); }
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <typename F>
void yc_run(unsigned gx, unsigned gy, unsigned threads, bool synchronising, F fn) {
  for (unsigned by = 0; by < gy; ++by)
    for (unsigned bx = 0; bx < gx; ++bx) {
      if (!synchronising) {
        for (unsigned t = 0; t < threads; ++t) {
          threadIdx = {t, 0, 0};
          blockIdx = {bx, by, 0};
          fn();
        }
        continue;
      }
      std::barrier<> bar(threads);
      yc_block_barrier = &bar;
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          threadIdx = {t, 0, 0};
          blockIdx = {bx, by, 0};
          fn();
        });
      for (std::thread& th : pool) th.join();
    }
}
)";

// Runs the emitted kernels of prefix "emu"; dims: the grid (x, y) of pre, decode, rank, nms.
constexpr const char* kHostKernelRunners = R"(
#define YC_EXPORT extern "C" __attribute__((visibility("default")))
YC_EXPORT void emulate_pre(const unsigned char* frames, const YcImageParams* images, void* out,
                           const unsigned* dims) {
  yc_run(dims[0], dims[1], emu::THREADS, false,
         [&] { emu::emu_pre(frames, images, static_cast<emu::InT*>(out)); });
}
YC_EXPORT void emulate_post(const void* head, const YcDetectParams* params, unsigned char* ws,
                            unsigned char* result, const unsigned* dims) {
  yc_run(dims[2], dims[3], emu::THREADS, false,
         [&] { emu::emu_decode(static_cast<const emu::HeadT*>(head), params, ws); });
  yc_run(dims[4], dims[5], emu::THREADS, true, [&] { emu::emu_rank(ws); });
  yc_run(dims[6], dims[7], emu::THREADS, true, [&] { emu::emu_nms(params, ws, result); });
}
)";

class EmulatedDetect {
 public:
  explicit EmulatedDetect(DetectKernelConfig c) {
    c.prefix = "emu";
    const DetectKernels k = emit_detect_kernels(c);
    spec_ = k.spec;
    const std::string source =
        std::string(kHostPrelude) + kHostKernelPrelude + k.source + kHostKernelRunners;
    cpu::HostCompilerOptions opts;
    opts.flags = {"-O1",
                  "-std=c++20",
                  "-fPIC",
                  "-shared",
                  "-pthread",
                  "-ffp-contract=off",
                  "-fvisibility=hidden",
                  "-fno-gnu-unique",
                  "-Wno-unknown-pragmas"};
    lib_ = std::make_unique<runtime::KernelLibrary>(cpu::compile_shared_object(source, opts).bytes);
    for (const auto* l : {&spec_.pre, &spec_.decode, &spec_.rank, &spec_.nms}) {
      EXPECT_EQ(l->dims.block, (std::array<unsigned, 3>{256, 1, 1}));
      dims_.push_back(l->dims.grid[0]);
      dims_.push_back(l->dims.grid[1]);
    }
    workspace_.assign(spec_.workspace_bytes / 8 + 1, 0);
    result_.assign(spec_.result_bytes / 8 + 1, 0);
  }
  void pre(const uint8_t* frames, const std::vector<rt::YcImageParams>& images, void* out) const {
    using Fn = void (*)(const uint8_t*, const rt::YcImageParams*, void*, const unsigned*);
    reinterpret_cast<Fn>(lib_->symbol("emulate_pre"))(frames, images.data(), out, dims_.data());
  }
  // Post-processing of a head (f32 data); the detections of item b in network-input pixels.
  std::vector<detect::Detection> post(const Tensor& head, float conf, float iou, int max_det,
                                      int b = 0) {
    using Fn =
        void (*)(const void*, const rt::YcDetectParams*, uint8_t*, uint8_t*, const unsigned*);
    const rt::YcDetectParams params{conf, iou, max_det, 0};
    reinterpret_cast<Fn>(lib_->symbol("emulate_post"))(
        head.raw(), &params, reinterpret_cast<uint8_t*>(workspace_.data()),
        reinterpret_cast<uint8_t*>(result_.data()), dims_.data());
    const auto* base = reinterpret_cast<const uint8_t*>(result_.data());
    const int count = reinterpret_cast<const int*>(base)[b];
    EXPECT_EQ(reinterpret_cast<const unsigned*>(workspace_.data())[b], 0u)
        << "the NMS kernel must reset the candidate counter";
    const auto* dets = reinterpret_cast<const rt::YcDetection*>(base + spec_.result_dets_offset) +
                       static_cast<size_t>(b) * spec_.max_det_cap;
    std::vector<detect::Detection> out;
    for (int i = 0; i < count; ++i)
      out.push_back(
          {{dets[i].x1, dets[i].y1, dets[i].x2, dets[i].y2}, dets[i].score, dets[i].class_id});
    return out;
  }

 private:
  rt::GpuDetectSpec spec_;
  std::unique_ptr<runtime::KernelLibrary> lib_;
  std::vector<unsigned> dims_;
  std::vector<uint64_t> workspace_, result_;
};

// Detector::postprocess less the mapping: decode_head, then nms (v10: stable sort and cap).
std::vector<detect::Detection> cpu_post(Family f, const Tensor& head, float conf, float iou,
                                        int max_det, int w, int h) {
  std::vector<detect::Detection> dets = detect::decode_head(f, head, conf, w, h);
  if (f != Family::kYoloV10) return detect::nms(std::move(dets), iou, max_det);
  std::stable_sort(dets.begin(), dets.end(),
                   [](const auto& a, const auto& b) { return a.score > b.score; });
  if (dets.size() > static_cast<size_t>(max_det)) dets.resize(static_cast<size_t>(max_det));
  return dets;
}

TEST(DetectEmulatedKernels, PostprocessingEqualsCpuDecodeAndNms) {
  for (Family f : {Family::kYoloV5, Family::kYoloV8, Family::kYoloV10, Family::kYoloX}) {
    const Tensor head = random_head(f, 320, 256, 11);
    DetectKernelConfig c;
    c.family = f;
    c.input_w = 320;
    c.input_h = 256;
    c.head_shape = {1, head.dim(1), head.dim(2)};
    c.max_det_cap = 400;
    EmulatedDetect emu(c);
    // conf 0: every row a candidate (thousands: many NMS chunks); iou 0: one box per class;
    // iou 1: no suppression, max_det caps.
    for (auto [conf, iou, max_det] :
         {std::tuple{0.0f, 0.45f, 400}, std::tuple{0.3f, 0.7f, 300}, std::tuple{0.0f, 0.0f, 400},
          std::tuple{0.0f, 1.0f, 400}, std::tuple{0.5f, 0.5f, 7}}) {
      SCOPED_TRACE(fmt::format("{} conf {} iou {} max_det {}", family_name(f), conf, iou, max_det));
      const std::vector<detect::Detection> want = cpu_post(f, head, conf, iou, max_det, 320, 256);
      const std::vector<detect::Detection> got = emu.post(head, conf, iou, max_det);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_GT(want.size(), 0u);
      const float tol = f == Family::kYoloX ? 1e-5f : 0.0f;  // see DecodersEqualDecodeHead
      const auto near = [tol](float a, float b) {
        return a == b || std::fabs(a - b) <= tol * std::max(1.0f, std::fabs(b));
      };
      for (size_t i = 0; i < got.size(); ++i) {
        const detect::Detection &g = got[i], &d = want[i];
        ASSERT_TRUE(near(g.box.x1, d.box.x1) && near(g.box.y1, d.box.y1) &&
                    near(g.box.x2, d.box.x2) && near(g.box.y2, d.box.y2) && g.score == d.score &&
                    g.class_id == d.class_id)
            << std::setprecision(9) << "detection " << i << ": got " << g.box.x1 << " " << g.box.y1
            << " " << g.box.x2 << " " << g.box.y2 << " " << g.score << " " << g.class_id
            << ", want " << d.box.x1 << " " << d.box.y1 << " " << d.box.x2 << " " << d.box.y2 << " "
            << d.score << " " << d.class_id;
      }
    }
  }
}

TEST(DetectEmulatedKernels, PreprocessingBatchStridesAndDtypes) {
  // Two frames of different sizes in one staging buffer (pitch of the wider), batch 2, NHWC f16
  // and NCHW f32, against the CPU.
  const detect::Image imgs[] = {test_image(150, 90, 21), test_image(61, 133, 22)};
  const int pitch = 150 * 3, rows = 133;
  std::vector<uint8_t> frames(static_cast<size_t>(2) * pitch * rows, 0);
  std::vector<rt::YcImageParams> params(2);
  for (int b = 0; b < 2; ++b) {
    for (int y = 0; y < imgs[b].height; ++y)
      std::memcpy(&frames[(static_cast<size_t>(b) * rows + y) * pitch], imgs[b].pixel(0, y),
                  static_cast<size_t>(imgs[b].width) * 3);
  }
  for (Family f : {Family::kYoloV8, Family::kYoloX}) {
    for (bool nhwc : {false, true}) {
      const DType dtype = nhwc ? DType::kFloat16 : DType::kFloat32;
      SCOPED_TRACE(fmt::format("{} {}", family_name(f), nhwc ? "nhwc f16" : "nchw f32"));
      const int w = 96, h = 64;
      DetectKernelConfig c;
      c.family = f;
      c.input_w = w;
      c.input_h = h;
      c.input_dtype = dtype;
      c.input_strides = nhwc ? nhwc_strides(w, h) : nchw_strides(w, h);
      c.head_shape = f == Family::kYoloX ? std::array<int64_t, 3>{2, 126, 6}
                                         : std::array<int64_t, 3>{2, 5, 126};
      EmulatedDetect emu(c);
      for (int b = 0; b < 2; ++b) {
        const rt::FramePlacement p = rt::frame_placement(f, imgs[b].width, imgs[b].height, w, h);
        params[b] = {static_cast<long long>(b) * pitch * rows,
                     imgs[b].width,
                     imgs[b].height,
                     pitch,
                     p.new_w,
                     p.new_h,
                     p.left,
                     p.top,
                     0};
      }
      const size_t elem = dtype_size(dtype), item = static_cast<size_t>(3) * w * h;
      std::vector<uint8_t> out(2 * item * elem, 0xee);
      emu.pre(frames.data(), params, out.data());
      for (int b = 0; b < 2; ++b) {
        const Tensor want = f == Family::kYoloX
                                ? detect::preprocess_yolox(imgs[b], w, h, dtype).input
                                : detect::preprocess_ultralytics(imgs[b], w, h, dtype).input;
        const auto* wp = static_cast<const uint8_t*>(want.raw());
        size_t diff = 0;
        for (int ch = 0; ch < 3; ++ch)
          for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
              const size_t wi = (static_cast<size_t>(ch) * h + y) * w + x;
              const size_t gi = nhwc ? (static_cast<size_t>(y) * w + x) * 3 + ch : wi;
              diff += std::memcmp(wp + wi * elem, out.data() + (b * item + gi) * elem, elem) != 0;
            }
        EXPECT_EQ(diff, 0u) << "item " << b;
      }
    }
  }
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
