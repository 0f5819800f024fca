// Cross build for aarch64: conv, depthwise conv, max-pool / SPPF, nearest resize and elementwise
// kernels generated for NEON, compiled with aarch64-linux-gnu-g++ into one static executable
// with a harness (it reads the inputs from a file, runs every kernel, writes the outputs) and run
// under qemu-aarch64; the outputs must equal those of the same kernels generated for this
// machine's ISA (AVX-512 intrinsics here: another code path) and run natively. The host kernels
// are checked against the reference ops by the unit tests. Skips when the cross compiler or
// qemu-user is missing (scripts/setup.sh installs both).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/dwconv_template.h"
#include "codegen/cpu/elementwise_template.h"
#include "codegen/cpu/host_compiler.h"
#include "codegen/cpu/pool_template.h"
#include "codegen/cpu/resize_template.h"
#include "graph_builder.h"
#include "passes/pipeline.h"
#include "targets/cpu/cpu_attributes.h"

namespace yoloc::codegen::cpu {
namespace {

namespace fs = std::filesystem;
using testing::input;
using testing::node;

// The tools, overridable for other toolchains (and to check the skip).
std::string tool(const char* env, const char* fallback) {
  const char* v = std::getenv(env);
  return v && *v ? v : fallback;
}
const std::string kCrossCxx = tool("YOLOC_CROSS_CXX", "aarch64-linux-gnu-g++");
const std::string kQemu = tool("YOLOC_QEMU_AARCH64", "qemu-aarch64");

// One kernel run of the harness: its arrays are slices of one input and one output file.
struct Call {
  std::string what;
  std::string symbol;
  bool conv_abi = false;  // (in, w, bias, res, out, begin, end); else (in[], out[], begin, end)
  std::vector<std::vector<float>> inputs;  // conv ABI: in, w, bias, res (empty: none)
  std::vector<int64_t> outputs;            // sizes
  int64_t work_items = 0;
};

// The harness: main(IN, OUT) reads all inputs, runs each call over its work items in two halves
// (so begin / end are exercised), writes all outputs (NaN where a kernel wrote nothing).
std::string harness_source(const std::vector<Call>& calls) {
  int64_t n_in = 0, n_out = 0;
  std::ostringstream body;
  for (const Call& c : calls) {
    std::vector<std::string> ins, outs;
    for (const auto& a : c.inputs) {
      ins.push_back(a.empty() ? "nullptr" : "I + " + std::to_string(n_in));
      n_in += static_cast<int64_t>(a.size());
    }
    for (int64_t size : c.outputs) {
      outs.push_back("O + " + std::to_string(n_out));
      n_out += size;
    }
    const auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    body << "  for (int64_t h = 0; h < 2; ++h) {  // " << c.what << "\n"
         << "    const int64_t b = h * " << c.work_items << " / 2, e = (h + 1) * " << c.work_items
         << " / 2;\n";
    if (c.conv_abi) {
      body << "    " << c.symbol << "(" << join(ins) << ", " << join(outs) << ", b, e);\n";
    } else {
      body << "    const float* const in[] = {" << join(ins) << "};\n"
           << "    float* const out[] = {" << join(outs) << "};\n"
           << "    " << c.symbol << "(in, out, b, e);\n";
    }
    body << "  }\n";
  }
  std::ostringstream s;
  s << R"(
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
    return 2;
  }
  std::vector<float> in()"
    << n_in << R"(), out()" << n_out << R"(, NAN);
  std::FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(in.data(), sizeof(float), in.size(), f) != in.size()) {
    std::fprintf(stderr, "cannot read %zu floats from %s\n", in.size(), argv[1]);
    return 3;
  }
  std::fclose(f);
  const float* I = in.data();
  float* O = out.data();
)" << body.str()
    << R"(  f = std::fopen(argv[2], "wb");
  if (!f || std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size()) return 4;
  return std::fclose(f) == 0 ? 0 : 4;
}
)";
  return s.str();
}

std::vector<float> read_floats(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<float> v(static_cast<size_t>(fs::exists(p) ? fs::file_size(p) / sizeof(float) : 0));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

void write_bytes(const fs::path& p, const char* data, size_t n, bool executable) {
  std::ofstream(p, std::ios::binary).write(data, static_cast<std::streamsize>(n));
  if (executable) fs::permissions(p, fs::perms::owner_all);
}

bool command_runs(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

// Builds `kernels` + harness with opts, runs it on in.bin (through `runner`, e.g. qemu) and
// returns the outputs.
std::vector<float> build_and_run(const std::string& kernels, const std::vector<Call>& calls,
                                 const HostCompilerOptions& opts, const std::string& runner,
                                 const fs::path& dir, const std::string& name) {
  const SharedObject exe = compile_static_executable(kernels + harness_source(calls), opts);
  if (!runner.empty()) {  // an ELF for aarch64 (e_machine 183), so the emulator really ran it
    EXPECT_TRUE(exe.bytes.size() > 20 &&
                exe.bytes.compare(0, 4,
                                  "\x7f"
                                  "ELF") == 0 &&
                static_cast<unsigned char>(exe.bytes[18]) == 183 && exe.bytes[19] == 0);
  }
  const fs::path bin = dir / name, out = dir / (name + ".out");
  write_bytes(bin, exe.bytes.data(), exe.bytes.size(), true);
  const std::string cmd = (runner.empty() ? "" : runner + " ") + "'" + bin.string() + "' '" +
                          (dir / "in.bin").string() + "' '" + out.string() + "'";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(status, 0) << cmd;
  return read_floats(out);
}

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

TEST(CrossAarch64, NeonKernelsUnderQemuMatchHost) {
  if (compiler_arch(kCrossCxx) != "aarch64" || !command_runs(kQemu + " --version")) {
    GTEST_SKIP() << kCrossCxx << " or " << kQemu << " is missing: install the Debian packages "
                 << "g++-aarch64-linux-gnu and qemu-user (scripts/setup.sh does)";
  }
  // Every NEON tile (ocb x (owb + 1) <= 7 vectors) fits AVX2's and AVX-512's registers too, so
  // both builds take the same configs and packed weights. A host of neither ISA builds the
  // NEON source itself (vector extensions compile for any target).
  const CpuIsa host = detect_host_isa();
  const CpuIsa host_emit = host == CpuIsa::kGeneric ? CpuIsa::kNeon : host;
  std::mt19937 rng(11);
  std::vector<Call> calls;
  std::string neon_src, host_src;
  const auto sym = [&] { return "k" + std::to_string(calls.size()); };

  // Dense conv: pointwise with SiLU and residual, 3x3 with residual (edge and tail tiles), 3x3
  // stride 2, the 3-channel first conv.
  for (ConvTask t : {ConvTask::make(1, 32, 9, 11, 32, 1, 1, 0, Activation::kSilu, true),
                     ConvTask::make(1, 32, 8, 11, 64, 3, 1, 1, Activation::kNone, true),
                     ConvTask::make(1, 16, 13, 10, 48, 3, 2, 1, Activation::kRelu),
                     ConvTask::make(2, 3, 12, 14, 16, 3, 2, 1, Activation::kSilu)}) {
    t.isa = CpuIsa::kNeon;
    std::vector<ScheduleConfig> cfgs = {ConvTemplate::default_config(t)};
    const ScheduleConfig small({{"ocb", 1}, {"owb", 2}, {"ict", 1}, {"order", 1}, {"unroll", 1}});
    if (!(small == cfgs[0])) cfgs.push_back(small);
    for (const ScheduleConfig& cfg : cfgs) {
      Call c{t.key() + " | " + cfg.str(), sym(), true, {}, {}, 0};
      const CpuKernel k = ConvTemplate::emit(t, cfg, c.symbol);
      neon_src += k.source;
      ConvTask h = t;
      h.isa = host_emit;
      host_src += ConvTemplate::emit(h, cfg, c.symbol).source;
      const int64_t in =
          t.c < kBlock ? t.n * t.c * t.h * t.w : t.n * ceil_div(t.c, kBlock) * kBlock * t.h * t.w;
      const int64_t out = t.n * t.k * t.oh * t.ow;
      const auto w = random_floats(t.k * t.c * t.kh * t.kw, rng);
      c.inputs = {random_floats(in, rng), ConvTemplate::pack_weights(t, cfg, w.data()),
                  random_floats(t.k, rng),
                  t.residual ? random_floats(out, rng) : std::vector<float>{}};
      c.outputs = {out};
      c.work_items = k.work_items;
      calls.push_back(std::move(c));
    }
  }
  // Depthwise: NCHW16c 3x3 with SiLU and residual; plain NCHW 5x5 stride 2.
  for (ConvTask t : {ConvTask::make(1, 32, 9, 10, 32, 3, 1, 1, Activation::kSilu, true),
                     ConvTask::make(2, 8, 11, 9, 8, 5, 2, 2, Activation::kRelu)}) {
    t.groups = t.c;
    t.isa = CpuIsa::kNeon;
    const ScheduleConfig cfg = DwConvTemplate::default_config(t);
    Call c{t.key() + " | " + cfg.str(), sym(), true, {}, {}, 0};
    const CpuKernel k = DwConvTemplate::emit(t, cfg, c.symbol);
    neon_src += k.source;
    host_src += k.source;
    const auto w = random_floats(t.c * t.kh * t.kw, rng);
    const int64_t out = t.n * t.c * t.oh * t.ow;
    c.inputs = {random_floats(t.n * t.c * t.h * t.w, rng),
                DwConvTemplate::pack_weights(t, w.data()), random_floats(t.c, rng),
                t.residual ? random_floats(out, rng) : std::vector<float>{}};
    c.outputs = {out};
    c.work_items = k.work_items;
    calls.push_back(std::move(c));
  }
  // The IR-driven templates are plain C++ and the same for every ISA; their build flags differ.
  const auto add_io = [&](const CpuKernel& k, const std::string& what,
                          const std::vector<std::vector<float>>& inputs,
                          const std::vector<int64_t>& outputs) {
    neon_src += k.source;
    host_src += k.source;
    calls.push_back({what, k.symbol, false, inputs, outputs, k.work_items});
  };
  {  // SPPF-like pool of NCHW16c, and a plain 2x2 stride-2 one.
    PoolTask p;
    p.n = 1, p.c = 32, p.h = p.oh = 10, p.w = p.ow = 9, p.lanes = kBlock, p.copy_input = true;
    p.windows = {{5, 5, 1, 1, 2, 2}, {9, 9, 1, 1, 4, 4}, {13, 13, 1, 1, 6, 6}};
    PoolTask q;
    q.n = 2, q.c = 3, q.h = 11, q.w = 13, q.oh = 5, q.ow = 6, q.lanes = 1;
    q.windows = {{2, 2, 2, 2, 0, 0}};
    for (const PoolTask& t : {p, q}) {
      const ScheduleConfig cfg = PoolTemplate::default_config(t);
      add_io(PoolTemplate::emit(t, cfg, sym()), t.key(),
             {random_floats(t.n * t.c * t.h * t.w, rng)}, {t.n * t.out_c() * t.oh * t.ow});
    }
  }
  {  // Nearest 2x upsample of NCHW16c.
    ResizeTask r;
    r.n = 1, r.c = 32, r.h = 5, r.w = 6, r.oh = 10, r.ow = 12, r.lanes = kBlock;
    r.out_batch_stride = r.c * r.oh * r.ow;
    r.rows = *nearest_indices(r.h, r.oh, 2.0, "asymmetric", "floor");
    r.cols = *nearest_indices(r.w, r.ow, 2.0, "asymmetric", "floor");
    add_io(ResizeTemplate::emit(r, ResizeTemplate::default_config(r), sym()), r.key(),
           {random_floats(r.n * r.c * r.h * r.w, rng)}, {r.n * r.c * r.oh * r.ow});
  }
  // An elementwise chain with broadcast constants, between two convs so it stays one group.
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {1, 32, 6, 7});
  Value* a = testing::conv(*g, x, 32, 32, 1, 1);
  Value* e = node(*g, "Sigmoid", {a});
  e = node(*g, "Mul", {e, g->add_constant("pc", testing::random_tensor({1, 32, 1, 1}, 5))});
  e = node(*g, "Tanh", {node(*g, "Add", {e, a})});
  e = node(*g, "Div", {e, g->add_constant("pw", testing::random_tensor({7}, 6, 0.5f, 2.f))});
  g->outputs = {testing::conv(*g, e, 32, 16, 1, 7)};
  PassContext ctx;
  ctx.target = yoloc::targets::cpu_attributes();
  optimize(*g, ctx);
  int elementwise = 0;
  for (const FusedGroup& grp : g->groups) {
    const auto t = elementwise_task_from_group(*g, grp);
    if (!t) continue;
    ++elementwise;
    std::vector<std::vector<float>> ins;
    for (const Value* v : t->io.inputs) {
      ins.push_back(v->is_constant() ? std::vector<float>(v->data.data<float>(),
                                                          v->data.data<float>() + v->data.numel())
                                     : random_floats(shape_numel(v->type.static_shape()), rng));
    }
    std::vector<int64_t> outs;
    for (const Value* v : t->io.outputs) outs.push_back(shape_numel(v->type.static_shape()));
    add_io(ElementwiseTemplate::emit(*t, ElementwiseTemplate::default_config(*t), sym()), t->key(),
           ins, outs);
  }
  ASSERT_EQ(elementwise, 1);

  char tmpl[] = "/tmp/yoloc-cross-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  {
    std::ofstream in(dir / "in.bin", std::ios::binary);
    for (const Call& c : calls)
      for (const auto& v : c.inputs)
        in.write(reinterpret_cast<const char*>(v.data()),
                 static_cast<std::streamsize>(v.size() * sizeof(float)));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> neon = build_and_run(
      neon_src, calls, host_compiler_options_for(kCrossCxx, CpuIsa::kNeon), kQemu, dir, "neon");
  const auto t1 = std::chrono::steady_clock::now();
  const std::vector<float> native =
      build_and_run(host_src, calls,
                    host_compiler_options_for("c++", host_emit == host ? host : CpuIsa::kGeneric),
                    "", dir, "host");
  std::printf("%zu kernels: aarch64 build + qemu run %.1f s, host build + run %.1f s\n",
              calls.size(), std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  std::error_code ec;
  fs::remove_all(dir, ec);

  size_t want = 0;
  for (const Call& c : calls)
    for (int64_t n : c.outputs) want += static_cast<size_t>(n);
  ASSERT_EQ(neon.size(), want);
  ASSERT_EQ(native.size(), want);
  size_t at = 0;
  for (const Call& c : calls) {
    int bad = 0;
    for (int64_t n : c.outputs) {
      for (int64_t i = 0; i < n; ++i, ++at) {
        const float got = neon[at], ref = native[at];
        if (!(std::fabs(got - ref) <= 1e-5f * std::max(1.f, std::fabs(ref))) && bad++ < 3) {
          ADD_FAILURE() << c.what << " element " << i << ": aarch64 " << got << ", host " << ref;
        }
      }
    }
    EXPECT_EQ(bad, 0) << c.what;
  }
}

}  // namespace
}  // namespace yoloc::codegen::cpu
