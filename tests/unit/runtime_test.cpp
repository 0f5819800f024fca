// The runtime: an artifact built by hand (kernels compiled here to the kernel ABI) runs through
// the executor, the C++ Detector and the C API, against references computed in the test.
#include "yoloc/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "artifact/artifact_writer.h"
#include "codegen/cpu/host_compiler.h"
#include "codegen/cpu/kernel_table.h"
#include "core/error.h"
#include "yoloc/image.h"
#include "runtime/executor.h"
#include "runtime/kernel_library.h"
#include "runtime/program.h"
#include "yoloc/yoloc.h"

using namespace yoloc;
using namespace yoloc::runtime;
namespace fs = std::filesystem;

namespace {

// Three kernels to the ABI: a 1x1 conv (typed, exposed through the wrapper convention of
// kernel_abi.h), an elementwise add + ReLU, and a fixed YOLOv8 head of one anchor.
constexpr const char* kKernels = R"(
#include <stdint.h>
static void conv1x1(const float* x, const float* w, const float* b, float* y, int64_t c,
                    int64_t hw, int64_t k0, int64_t k1) {
  for (int64_t k = k0; k < k1; ++k)
    for (int64_t p = 0; p < hw; ++p) {
      float s = b[k];
      for (int64_t i = 0; i < c; ++i) s += w[k * c + i] * x[i * hw + p];
      y[k * hw + p] = s;
    }
}
extern "C" void conv1x1_abi(void* const* a, const int64_t* p, int64_t b, int64_t e) {
  conv1x1((const float*)a[0], (const float*)a[1], (const float*)a[2], (float*)a[3], p[0], p[1],
          b, e);
}
extern "C" void add_relu(void* const* a, const int64_t* p, int64_t b, int64_t e) {
  const float* x = (const float*)a[0];
  const float* r = (const float*)a[1];
  float* y = (float*)a[2];
  for (int64_t i = b; i < e; ++i) y[i] = x[i] + r[i] > 0 ? x[i] + r[i] : 0;
}
extern "C" void fixed_head(void* const* a, const int64_t* p, int64_t b, int64_t e) {
  float* y = (float*)a[1];
  const float v[6] = {16, 16, 8, 8, 0.9f, 0.1f};  // cx, cy, w, h, two class scores
  for (int i = 0; i < 6; ++i) y[i] = v[i];
}
)";

/// kKernels plus `extra`, with the kernel table of `p` (each call writing through its last
/// binding, as every kernel here does); built once per source.
std::string kernel_library(const Program& p, const std::string& extra = "") {
  static std::map<std::string, std::string> built;
  std::vector<std::vector<bool>> writes;
  for (const KernelCall& c : p.calls) {
    writes.emplace_back(c.args.size(), false);
    if (!c.args.empty()) writes.back().back() = true;
  }
  const std::string source = kKernels + extra + codegen::cpu::kernel_table_source(p, writes);
  auto it = built.find(source);
  if (it == built.end())
    it = built.emplace(source, codegen::cpu::compile_shared_object(source).bytes).first;
  return it->second;
}

constexpr int64_t kC = 5, kK = 7, kH = 3, kW = 4, kHW = kH * kW;

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

std::string as_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

/// The conv + add + ReLU network's weights: conv weights [K][C], bias [K], residual [K][HW].
struct Weights {
  std::vector<float> w = random_floats(kK * kC, 1), b = random_floats(kK, 2),
                     r = random_floats(kK * kHW, 3);
};

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("yoloc_runtime_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// y = relu(conv1x1(x) + r): x at arena 0, the conv output at 256, y at 640.
  static std::pair<artifact::Manifest, Program> conv_net() {
    artifact::Manifest m;
    m.tool_version = "test";
    m.target = "cpu";
    m.precision = "fp32";
    m.inputs = {{"x", "float32", {1, kC, kH, kW}}};
    m.outputs = {{"y", "float32", {1, kK, kH, kW}}};
    const uint64_t f = sizeof(float), wb = kK * kC * f, bb = kK * f, rb = kK * kHW * f;
    Program p;
    p.kernel_blob = "kernels.so";
    p.arena_bytes = 1024;
    p.input_offsets = {0};
    p.output_offsets = {640};
    p.calls = {
        {"conv1x1_abi",
         kK,
         {{kArena, 0, kC * kHW * f}, {"weights", 0, wb}, {"weights", 192, bb}, {kArena, 256, rb}},
         {kC, kHW}},
        {"add_relu", kK * kHW, {{kArena, 256, rb}, {"weights", 256, rb}, {kArena, 640, rb}}, {}}};
    return {m, p};
  }

  /// Writes an artifact of `m` with program `p`, a kernel library (default: kKernels built) and
  /// the conv net's weights.
  std::string write(const std::string& name, artifact::Manifest m, const Program& p) const {
    return write(name, m, p, kernel_library(p));
  }
  std::string write(const std::string& name, artifact::Manifest m, const Program& p,
                    const std::string& library, const std::string& secret_key = "") const {
    m.program = program_to_json(p);
    artifact::ArtifactWriter w(std::move(m));
    if (!secret_key.empty()) w.sign_with_key_file(secret_key);
    const Weights ws;
    std::string weights(256 + kK * kHW * sizeof(float), '\0');
    weights.replace(0, ws.w.size() * 4, as_bytes(ws.w));
    weights.replace(192, ws.b.size() * 4, as_bytes(ws.b));
    weights.replace(256, ws.r.size() * 4, as_bytes(ws.r));
    w.add_blob("weights", "weights", weights);
    w.add_blob("kernels.so", "kernel_so", library);
    w.write(path(name));
    return path(name);
  }

  /// A YOLOv8-family detector (input 1x3x32x32, two classes) whose head is fixed: one anchor
  /// at (16, 16), 8x8, scores 0.9 and 0.1.
  std::string write_detector(const std::string& name) const {
    artifact::Manifest m;
    m.tool_version = "test";
    m.family = "yolov8";
    m.target = "cpu";
    m.precision = "fp32";
    m.inputs = {{"images", "float32", {1, 3, 32, 32}}};
    m.outputs = {{"output0", "float32", {1, 6, 1}}};
    m.class_names = {"cat", "dog"};
    m.preprocess = {{"kind", "letterbox"}};
    Program p;
    p.kernel_blob = "kernels.so";
    p.arena_bytes = 3 * 32 * 32 * 4 + 64;
    p.input_offsets = {0};
    p.output_offsets = {3 * 32 * 32 * 4};
    p.calls = {
        {"fixed_head", 1, {{kArena, 0, 3 * 32 * 32 * 4}, {kArena, 3 * 32 * 32 * 4, 24}}, {}}};
    return write(name, m, p);
  }

  fs::path dir_;
};

/// relu(W x + b + r), computed plainly in double.
std::vector<float> reference(const std::vector<float>& x) {
  const Weights ws;
  std::vector<float> y(kK * kHW);
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t p = 0; p < kHW; ++p) {
      double s = ws.b[k] + ws.r[k * kHW + p];
      for (int64_t c = 0; c < kC; ++c) s += double(ws.w[k * kC + c]) * x[c * kHW + p];
      y[k * kHW + p] = static_cast<float>(std::max(s, 0.0));
    }
  return y;
}

DetectorOptions threads(int n) {
  DetectorOptions o;
  o.threads = n;
  return o;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << "message: " << (msg)

}  // namespace

TEST_F(RuntimeTest, ExecutorMatchesReferenceOnAnyThreadCount) {
  auto [m, p] = conv_net();
  const std::string file = write("conv.ycm", m, p);
  const std::vector<float> x = random_floats(kC * kHW, 4);
  const std::vector<float> want = reference(x);
  for (int threads : {1, 2, 3}) {
    auto art = std::make_shared<const artifact::Artifact>(artifact::Artifact::open(file));
    Executor exec(art, threads);
    EXPECT_EQ(exec.threads(), threads);
    for (int run = 0; run < 2; ++run) {  // the arena is reused across runs
      const std::vector<Tensor> out = exec.run({Tensor::from_vector({1, kC, kH, kW}, x)});
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].shape(), (Shape{1, kK, kH, kW}));
      for (int64_t i = 0; i < kK * kHW; ++i)
        EXPECT_NEAR(out[0].data<float>()[i], want[i], 1e-5) << "threads " << threads << " i " << i;
    }
  }
}

TEST_F(RuntimeTest, LibrariesLoadedTogetherStayApart) {
  // glibc knows a loaded object by its path: were /proc/self/fd/N reused while the first
  // library is loaded, the second load would return the first library (without `negate`).
  auto [m, p] = conv_net();
  const Detector a = Detector::load(write("conv.ycm", m, p), threads(2));
  artifact::Manifest mb = m;
  mb.outputs = {{"y", "float32", {1, kC, kH, kW}}};
  Program pb = p;
  pb.output_offsets = {256};
  pb.calls = {{"negate", kC * kHW, {{kArena, 0, kC * kHW * 4}, {kArena, 256, kC * kHW * 4}}, {}}};
  const std::string lib_b = kernel_library(
      pb, "extern \"C\" void negate(void* const* a, const int64_t* p, int64_t b, int64_t e) {\n"
          "  for (int64_t i = b; i < e; ++i) ((float*)a[1])[i] = -((const float*)a[0])[i];\n}\n");
  const Detector b = Detector::load(write("neg.ycm", mb, pb, lib_b), threads(1));
  const std::vector<float> x = random_floats(kC * kHW, 5);
  const Tensor in = Tensor::from_vector({1, kC, kH, kW}, x);
  const Tensor ya = a.infer({in})[0], yb = b.infer({in})[0];
  const std::vector<float> want = reference(x);
  for (int64_t i = 0; i < kK * kHW; ++i) EXPECT_NEAR(ya.data<float>()[i], want[i], 1e-5);
  for (int64_t i = 0; i < kC * kHW; ++i) EXPECT_EQ(yb.data<float>()[i], -x[i]);
}

TEST_F(RuntimeTest, ALibraryThatStaysLoadedDoesNotShadowTheNext) {
  // A library whose kernel made a thread-local with a destructor stays loaded after dlclose
  // until the thread exits; its memfd number is then free again, and a second library loaded
  // through the same /proc/self/fd/N path must not be answered with the first one.
  const auto lib = [](float value) {
    return codegen::cpu::compile_shared_object(fmt::format(
        "#include <stdint.h>\n#include <string>\n"
        "extern \"C\" void k(void* const* a, const int64_t*, int64_t b, int64_t e) {{\n"
        "  static thread_local std::string pin(100, 'x');  // registers a thread-exit dtor\n"
        "  for (int64_t i = b; i < e; ++i) ((float*)a[0])[i] = {:.1f}f + (float)pin.size() * 0;\n}}\n",
        value)).bytes;
  };
  const std::string first = lib(1.f), second = lib(2.f);
  float out = 0;
  void* args[] = {&out};
  {
    runtime::KernelLibrary a(std::as_bytes(std::span(first.data(), first.size())));
    reinterpret_cast<yoloc_kernel_fn>(a.symbol("k"))(args, nullptr, 0, 1);
    EXPECT_EQ(out, 1.f);
  }
  runtime::KernelLibrary b(std::as_bytes(std::span(second.data(), second.size())));
  reinterpret_cast<yoloc_kernel_fn>(b.symbol("k"))(args, nullptr, 0, 1);
  EXPECT_EQ(out, 2.f);
}

TEST_F(RuntimeTest, InferChecksInputs) {
  auto [m, p] = conv_net();
  const Detector d = Detector::load(write("conv.ycm", m, p), threads(1));
  EXPECT_HAS(error_of([&] { d.infer({}); }), "takes 1 input(s), 0 were given");
  EXPECT_HAS(error_of([&] {
               d.infer({Tensor(DType::kFloat32, {1, kC, kH, kW + 1})});
             }),
             "input 'x' must be float32 of shape");
  EXPECT_HAS(error_of([&] { d.infer({Tensor(DType::kFloat64, {1, kC, kH, kW})}); }), "float64");
  EXPECT_HAS(error_of([&] { d.detect(detect::Image(8, 8)); }), "names no detector family");
}

TEST_F(RuntimeTest, BadProgramsAreUserErrors) {
  auto [m, p] = conv_net();
  Program outside = p;
  outside.calls[1].args[1].offset = 300;  // past the end of the weights blob
  EXPECT_HAS(error_of([&] { Detector::load(write("a.ycm", m, outside)); }),
             "program.calls[1].args[1]");
  Program arena = p;
  arena.output_offsets = {1000};  // the output does not fit in the arena
  EXPECT_HAS(error_of([&] { Detector::load(write("b.ycm", m, arena)); }), "program.outputs[0]");
  Program symbol = p;
  symbol.calls[0].symbol = "no_such_kernel";
  EXPECT_HAS(error_of([&] { Detector::load(write("c.ycm", m, symbol, kernel_library(p))); }),
             "no_such_kernel");
  Program blob = p;
  blob.kernel_blob = "nope";
  EXPECT_HAS(error_of([&] { Detector::load(write("d.ycm", m, blob)); }), "'nope'");
  Program garbage = p;
  garbage.kernel_blob = "weights";  // not a shared object
  EXPECT_HAS(error_of([&] { Detector::load(write("e.ycm", m, garbage)); }), "kernel library");

  // A wrong ABI version and a manifest without any program.
  artifact::Manifest abi = m;
  abi.program = program_to_json(p);
  abi.program["abi"] = 99;
  artifact::ArtifactWriter w(abi);
  w.add_blob("kernels.so", "kernel_so", kernel_library(p));
  w.write(path("f.ycm"));
  EXPECT_HAS(error_of([&] { Detector::load(path("f.ycm")); }), "kernel ABI 99");
  artifact::ArtifactWriter none(m);
  none.write(path("g.ycm"));
  EXPECT_HAS(error_of([&] { Detector::load(path("g.ycm")); }), "holds no program");
}

TEST_F(RuntimeTest, DetectorRunsThePipeline) {
  const Detector d = Detector::load(write_detector("det.ycm"));
  EXPECT_EQ(d.family(), "yolov8");
  // 64x64 -> letterbox scale 0.5, no padding: the head's 8x8 box at (16, 16) is (24..40) here.
  const std::vector<detect::Detection> dets = d.detect(detect::Image(64, 64, 50));
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_EQ(dets[0].class_id, 0);
  EXPECT_NEAR(dets[0].score, 0.9, 1e-6);
  EXPECT_NEAR(dets[0].box.x1, 24, 1e-4);
  EXPECT_NEAR(dets[0].box.y1, 24, 1e-4);
  EXPECT_NEAR(dets[0].box.x2, 40, 1e-4);
  EXPECT_NEAR(dets[0].box.y2, 40, 1e-4);
  DetectorOptions strict;
  strict.conf = 0.95f;
  EXPECT_TRUE(Detector::load(path("det.ycm"), strict).detect(detect::Image(64, 64)).empty());
}

TEST_F(RuntimeTest, SubmitAndWaitGiveWhatDetectGives) {
  const Detector d = Detector::load(write_detector("det.ycm"));
  const detect::Image small(64, 64, 50), large(128, 96, 50);
  const uint64_t a = d.submit(small), b = d.submit(large);
  EXPECT_NE(a, b);
  // Waited for out of order: each ticket gets its own image's detections.
  const std::vector<detect::Detection> got_b = d.wait(b), got_a = d.wait(a);
  const auto same = [](const std::vector<detect::Detection>& x,
                       const std::vector<detect::Detection>& y) {
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].class_id, y[i].class_id);
      EXPECT_FLOAT_EQ(x[i].score, y[i].score);
      EXPECT_FLOAT_EQ(x[i].box.x1, y[i].box.x1);
      EXPECT_FLOAT_EQ(x[i].box.y2, y[i].box.y2);
    }
  };
  same(got_a, d.detect(small));
  same(got_b, d.detect(large));
  ASSERT_EQ(got_b.size(), 1u);
  EXPECT_NEAR(got_b[0].box.x1, 48, 1e-3);  // 128x96 -> scale 0.25: network x 12 is 48 here
  EXPECT_HAS(error_of([&] { d.wait(a); }), "already waited for");
  EXPECT_HAS(error_of([&] { d.wait(12345); }), "ticket 12345 is unknown");
  EXPECT_HAS(error_of([&] { d.submit(detect::Image()); }), "empty");
}

TEST_F(RuntimeTest, CApiRoundTrip) {
  const std::string file = write_detector("det.ycm");
  yoloc_options opts;
  yoloc_options_init(&opts);
  opts.threads = 2;
  yoloc_detector* d = nullptr;
  ASSERT_EQ(yoloc_detector_load(file.c_str(), &opts, &d), YOLOC_OK) << yoloc_last_error();
  ASSERT_NE(d, nullptr);

  // 128 x 64 RGB with a padded stride: letterbox scale 0.25, 8 pixels of padding on top and
  // bottom, so the box is (16 - 4) * 4 = 48 .. 80 across and (16 - 8 - 4) * 4 = 16 .. 48 down.
  const int w = 128, h = 64, stride = w * 3 + 5;
  std::vector<uint8_t> rgb(static_cast<size_t>(stride) * h, 90);
  yoloc_detection* dets = nullptr;
  size_t n = 0;
  ASSERT_EQ(yoloc_detect_rgb(d, rgb.data(), w, h, stride, &dets, &n), YOLOC_OK)
      << yoloc_last_error();
  ASSERT_EQ(n, 1u);
  EXPECT_STREQ(dets[0].class_name, "cat");
  EXPECT_NEAR(dets[0].x1, 48, 1e-3);
  EXPECT_NEAR(dets[0].x2, 80, 1e-3);
  EXPECT_NEAR(dets[0].y1, 16, 1e-3);
  EXPECT_NEAR(dets[0].y2, 48, 1e-3);
  // Pipelined: the same detection through submit and wait; a ticket is good for one wait.
  uint64_t ticket = 0;
  ASSERT_EQ(yoloc_submit_rgb(d, rgb.data(), w, h, stride, &ticket), YOLOC_OK) << yoloc_last_error();
  yoloc_detection* waited = nullptr;
  size_t waited_n = 0;
  ASSERT_EQ(yoloc_wait(d, ticket, &waited, &waited_n), YOLOC_OK) << yoloc_last_error();
  ASSERT_EQ(waited_n, 1u);
  EXPECT_FLOAT_EQ(waited[0].x1, dets[0].x1);
  EXPECT_FLOAT_EQ(waited[0].y2, dets[0].y2);
  EXPECT_FLOAT_EQ(waited[0].score, dets[0].score);
  yoloc_detections_free(waited);
  EXPECT_EQ(yoloc_wait(d, ticket, &waited, &waited_n), YOLOC_ERROR_RUNTIME);
  EXPECT_NE(std::string(yoloc_last_error()).find("already waited for"), std::string::npos);
  EXPECT_EQ(waited, nullptr);
  EXPECT_EQ(yoloc_submit_rgb(d, nullptr, w, h, stride, &ticket), YOLOC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(yoloc_submit_rgb(d, rgb.data(), 0, h, stride, &ticket), YOLOC_ERROR_BAD_IMAGE);
  yoloc_detections_free(dets);

  detect::write_image(path("img.png"), detect::Image(64, 64, 10));
  ASSERT_EQ(yoloc_detect_file(d, path("img.png").c_str(), &dets, &n), YOLOC_OK);
  ASSERT_EQ(n, 1u);
  EXPECT_NEAR(dets[0].x1, 24, 1e-3);
  yoloc_detections_free(dets);

  // Bad images.
  std::ofstream(path("not_an_image.png")) << "hello";
  EXPECT_EQ(yoloc_detect_file(d, path("not_an_image.png").c_str(), &dets, &n),
            YOLOC_ERROR_BAD_IMAGE);
  EXPECT_HAS(std::string(yoloc_last_error()), "not_an_image.png");
  EXPECT_EQ(dets, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(yoloc_detect_file(d, path("missing.png").c_str(), &dets, &n), YOLOC_ERROR_NOT_FOUND);
  EXPECT_EQ(yoloc_detect_rgb(d, rgb.data(), w, h, w * 3 - 1, &dets, &n), YOLOC_ERROR_BAD_IMAGE);
  EXPECT_EQ(yoloc_detect_rgb(d, rgb.data(), 0, h, stride, &dets, &n), YOLOC_ERROR_BAD_IMAGE);
  EXPECT_EQ(yoloc_detect_rgb(d, nullptr, w, h, stride, &dets, &n), YOLOC_ERROR_INVALID_ARGUMENT);
  yoloc_detector_free(d);
}

TEST_F(RuntimeTest, CApiLoadErrors) {
  yoloc_detector* d = reinterpret_cast<yoloc_detector*>(1);
  EXPECT_EQ(yoloc_detector_load(path("missing.ycm").c_str(), nullptr, &d), YOLOC_ERROR_NOT_FOUND);
  EXPECT_EQ(d, nullptr);
  EXPECT_HAS(std::string(yoloc_last_error()), "missing.ycm");
  EXPECT_STREQ(yoloc_status_name(YOLOC_ERROR_NOT_FOUND), "YOLOC_ERROR_NOT_FOUND");

  std::ofstream(path("garbage.ycm")) << "this is not an artifact";
  EXPECT_EQ(yoloc_detector_load(path("garbage.ycm").c_str(), nullptr, &d),
            YOLOC_ERROR_BAD_ARTIFACT);

  // One flipped byte in the blobs: the digest no longer matches.
  const std::string file = write_detector("det.ycm");
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() - 100] ^= 0x40;
  std::ofstream(path("tampered.ycm"), std::ios::binary) << bytes;
  EXPECT_EQ(yoloc_detector_load(path("tampered.ycm").c_str(), nullptr, &d),
            YOLOC_ERROR_BAD_ARTIFACT);
  EXPECT_HAS(std::string(yoloc_last_error()), "tampered.ycm");
  EXPECT_EQ(d, nullptr);

  yoloc_options opts;
  yoloc_options_init(&opts);
  opts.threads = -1;
  EXPECT_EQ(yoloc_detector_load(file.c_str(), &opts, &d), YOLOC_ERROR_INVALID_ARGUMENT);
  opts.threads = 0;
  opts.device = -1;
  EXPECT_EQ(yoloc_detector_load(file.c_str(), &opts, &d), YOLOC_ERROR_INVALID_ARGUMENT);
  EXPECT_HAS(std::string(yoloc_last_error()), "device");
  opts.device = 0;
  opts.public_key_file = "/nonexistent.pub";  // unsigned artifact, key demanded
  EXPECT_EQ(yoloc_detector_load(file.c_str(), &opts, &d), YOLOC_ERROR_BAD_ARTIFACT);
  EXPECT_EQ(yoloc_detector_load(nullptr, nullptr, &d), YOLOC_ERROR_INVALID_ARGUMENT);
}

// A thread count above the pool's cap is an error status, never a hang or a crash.
TEST_F(RuntimeTest, CApiTooManyThreads) {
  const std::string file = write_detector("det.ycm");
  yoloc_options opts;
  yoloc_options_init(&opts);
  opts.threads = 3000;
  yoloc_detector* d = reinterpret_cast<yoloc_detector*>(1);
  EXPECT_NE(yoloc_detector_load(file.c_str(), &opts, &d), YOLOC_OK);
  EXPECT_EQ(d, nullptr);
  EXPECT_HAS(std::string(yoloc_last_error()), "3000");
  EXPECT_HAS(std::string(yoloc_last_error()), "1024");
}

// A manifest edited behind a valid digest cannot make the executor call what the kernel
// library does not declare for that place, bind fewer bytes than a kernel touches, or write
// into the weights.
TEST_F(RuntimeTest, ProgramsMustMatchTheKernelTable) {
  auto [m, p] = conv_net();
  const std::string lib = kernel_library(p);
  const auto load_error = [&](const std::string& name, const Program& edited) {
    return error_of([&] { Detector::load(write(name, m, edited, lib)); });
  };
  Program system = p;
  system.calls[0].symbol = "system";
  EXPECT_HAS(load_error("sys.ycm", system), "call 0 ('system') is where the kernel library has");
  Program shorter = p;
  shorter.calls[1].args[2].bytes = 4;
  EXPECT_HAS(load_error("short.ycm", shorter), "binds 4 bytes of 'arena' as argument 2");
  Program to_weights = p;
  to_weights.calls[1].args[2] = {"weights", 0, kK * kHW * 4};
  EXPECT_HAS(load_error("w.ycm", to_weights), "binds its output (argument 2) to the read-only");
  Program fewer = p;
  fewer.calls[1].args.pop_back();
  EXPECT_HAS(load_error("fewer.ycm", fewer), "binds 2 arguments, its kernel takes 3");
  Program params = p;
  params.calls[1].params = {7};
  EXPECT_HAS(load_error("params.ycm", params), "passes 1 parameters, its kernel reads 0");
  Program items = p;
  items.calls[0].work_items = kK + 1;
  EXPECT_HAS(load_error("items.ycm", items), "work items");
  Program emptied = p;
  emptied.calls.clear();
  EXPECT_HAS(load_error("empty.ycm", emptied), "makes 0 calls, the kernel library declares 2");
  Program reversed = p;
  std::swap(reversed.calls[0], reversed.calls[1]);
  EXPECT_HAS(load_error("rev.ycm", reversed), "call 0 ('add_relu')");
  // The unedited program loads and runs (the checks refuse only what differs).
  EXPECT_NO_THROW(Detector::load(write("ok.ycm", m, p, lib)).infer(
      {Tensor::from_vector({1, kC, kH, kW}, random_floats(kC * kHW, 6))}));
}

TEST_F(RuntimeTest, TruncatedKernelLibrariesAreRefusedBeforeLoading) {
  auto [m, p] = conv_net();
  const std::string lib = kernel_library(p);
  for (const size_t keep : {lib.size() - 1, lib.size() / 2, size_t{200}}) {
    const std::string msg =
        error_of([&] { Detector::load(write("t.ycm", m, p, lib.substr(0, keep))); });
    EXPECT_HAS(msg, "truncated or malformed");
  }
}

TEST_F(RuntimeTest, TheArenaIsCapped) {
  auto [m, p] = conv_net();
  const std::string file = write("conv.ycm", m, p);
  DetectorOptions small;
  small.max_memory = 512;  // the arena has 1024 bytes
  EXPECT_HAS(error_of([&] { Detector::load(file, small); }), "more than the 0.0 MB memory cap");
  small.max_memory = 1024;
  EXPECT_NO_THROW(Detector::load(file, small));
  // A manifest asking for a petabyte is refused under the default cap (half the RAM).
  Program huge = p;
  huge.arena_bytes = uint64_t{1} << 50;
  EXPECT_HAS(error_of([&] { Detector::load(write("huge.ycm", m, huge, kernel_library(p))); }),
             "memory cap");
}

// The trust policy of the C++ and C APIs: keys given, keys from YOLOC_TRUSTED_KEYS, a
// signature required; an empty key is an error, not "no key".
TEST_F(RuntimeTest, TrustedKeysDecideWhatLoads) {
  artifact::generate_key_pair(path("k.key"), path("k.pub"));
  artifact::generate_key_pair(path("o.key"), path("o.pub"));
  auto [m, p] = conv_net();
  const std::string lib = kernel_library(p);
  const std::string signed_file = write("s.ycm", m, p, lib, path("k.key"));
  const std::string plain = write("p.ycm", m, p, lib);
  DetectorOptions trust;
  trust.trusted_keys = {path("o.pub"), path("k.pub")};
  EXPECT_NO_THROW(Detector::load(signed_file, trust));
  EXPECT_HAS(error_of([&] { Detector::load(plain, trust); }), "is not signed");
  DetectorOptions wrong;
  wrong.public_key_file = path("o.pub");
  EXPECT_HAS(error_of([&] { Detector::load(signed_file, wrong); }), "bad signature");
  DetectorOptions empty;
  empty.trusted_keys = {""};
  EXPECT_HAS(error_of([&] { Detector::load(signed_file, empty); }), "empty path");
  DetectorOptions required;
  required.require_signature = true;
  EXPECT_HAS(error_of([&] { Detector::load(signed_file, required); }), "no trusted public key");

  ::setenv("YOLOC_TRUSTED_KEYS", path("k.pub").c_str(), 1);
  EXPECT_HAS(error_of([&] { Detector::load(plain); }), "is not signed");
  EXPECT_NO_THROW(Detector::load(signed_file, required));
  ::setenv("YOLOC_TRUSTED_KEYS", "", 1);
  EXPECT_HAS(error_of([&] { Detector::load(plain); }), "YOLOC_TRUSTED_KEYS is set");
  ::unsetenv("YOLOC_TRUSTED_KEYS");

  yoloc_options opts;
  yoloc_options_init(&opts);
  yoloc_detector* d = nullptr;
  opts.public_key_file = "";
  EXPECT_EQ(yoloc_detector_load(signed_file.c_str(), &opts, &d), YOLOC_ERROR_INVALID_ARGUMENT);
  EXPECT_HAS(std::string(yoloc_last_error()), "empty string");
  opts.public_key_file = nullptr;
  const std::string both = path("o.pub") + ":" + path("k.pub");
  opts.trusted_keys = both.c_str();
  ASSERT_EQ(yoloc_detector_load(signed_file.c_str(), &opts, &d), YOLOC_OK) << yoloc_last_error();
  yoloc_detector_free(d);
  EXPECT_EQ(yoloc_detector_load(plain.c_str(), &opts, &d), YOLOC_ERROR_BAD_ARTIFACT);
  EXPECT_HAS(std::string(yoloc_last_error()), "is not signed");
  const std::string gap = path("k.pub") + "::" + path("o.pub");
  opts.trusted_keys = gap.c_str();
  EXPECT_EQ(yoloc_detector_load(signed_file.c_str(), &opts, &d), YOLOC_ERROR_INVALID_ARGUMENT);
  opts.trusted_keys = nullptr;
  opts.require_signature = 1;
  EXPECT_EQ(yoloc_detector_load(signed_file.c_str(), &opts, &d), YOLOC_ERROR_BAD_ARTIFACT);
  EXPECT_EQ(d, nullptr);
}
