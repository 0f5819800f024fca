// float16 activations in the CPU kernels: the generated half <-> float conversions of an
// elementwise Cast kernel (a float16 model's edges at fp32 precision), checked on every half
// bit pattern and on rounding cases against yoloc/half.h and hand-computed bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codegen/cpu/elementwise_template.h"
#include "codegen/cpu/host_compiler.h"
#include "core/error.h"
#include "yoloc/half.h"
#include "runtime/kernel_library.h"

namespace yoloc::codegen::cpu {
namespace {

using Fn = void (*)(const float* const*, float* const*, int64_t, int64_t);

// A graph x[1, n] (dtype from) -> Cast(to) -> y, its one node in an elementwise group, built
// into a kernel that `run` calls on raw buffers.
class CastKernel {
 public:
  CastKernel(DType from, DType to, int64_t n) {
    Value* x = g_.add_value("x", TensorType(from, {1, n}));
    g_.inputs.push_back(x);
    Attrs a;
    a.set("to", std::string(dtype_name(to)));
    Node* c = g_.add_node("Cast", {x}, 1, a);
    c->outputs[0]->type = TensorType(to, {1, n});
    g_.outputs.push_back(c->outputs[0]);
    FusedGroup grp;
    grp.id = 0;
    grp.kind = GroupKind::kElementwise;
    g_.groups.push_back(grp);
    c->group = 0;
    const auto t = elementwise_task_from_group(g_, g_.groups[0]);
    YOLOC_CHECK(t.has_value(), "the Cast group has no elementwise task");
    const CpuKernel k = ElementwiseTemplate::emit(*t, ElementwiseTemplate::default_config(*t), "cast");
    so_ = compile_shared_object(k.source);
    lib_ = std::make_unique<runtime::KernelLibrary>(so_.bytes);
    fn_ = reinterpret_cast<Fn>(lib_->symbol("cast"));
    items_ = k.work_items;
  }
  void run(const void* in, void* out) const {
    const float* ins[] = {static_cast<const float*>(in)};
    float* outs[] = {static_cast<float*>(out)};
    fn_(ins, outs, 0, items_);
  }

 private:
  Graph g_;
  SharedObject so_;
  std::unique_ptr<runtime::KernelLibrary> lib_;
  Fn fn_ = nullptr;
  int64_t items_ = 0;
};

TEST(CpuHalf, HalfToFloatIsExactForEveryBitPattern) {
  CastKernel k(DType::kFloat16, DType::kFloat32, 65536);
  std::vector<uint16_t> h(65536);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> f(h.size(), 0.f);
  k.run(h.data(), f.data());
  int bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const float want = half_bits_to_float(h[i]);
    const bool ok = std::isnan(want) ? std::isnan(f[i])
                                     : std::memcmp(&f[i], &want, sizeof(float)) == 0;
    if (!ok && bad++ < 5) ADD_FAILURE() << "half 0x" << std::hex << i << ": got " << f[i];
  }
  EXPECT_EQ(bad, 0);
  // Hand-computed: 1, -2, the largest half, the smallest subnormal, infinity.
  EXPECT_EQ(f[0x3c00], 1.f);
  EXPECT_EQ(f[0xc000], -2.f);
  EXPECT_EQ(f[0x7bff], 65504.f);
  EXPECT_EQ(f[0x0001], std::ldexp(1.f, -24));
  EXPECT_EQ(f[0x7c00], INFINITY);
}

TEST(CpuHalf, FloatToHalfRoundsToNearestEven) {
  // Hand-computed cases: exact values, ties (to even), overflow, subnormals, NaN.
  const std::vector<std::pair<float, uint16_t>> cases = {
      {1.f, 0x3c00},
      {-2.f, 0xc000},
      {65504.f, 0x7bff},
      {65519.f, 0x7bff},                              // below the halfway point to 65536
      {65520.f, 0x7c00},                              // the tie rounds to even: infinity
      {1e6f, 0x7c00},
      {-INFINITY, 0xfc00},
      {1.f + std::ldexp(1.f, -11), 0x3c00},           // tie between 1 and 1 + 2^-10: even
      {1.f + 3 * std::ldexp(1.f, -11), 0x3c02},       // tie: rounds up to even
      {std::ldexp(1.f, -24), 0x0001},                 // smallest subnormal
      {std::ldexp(1.f, -25), 0x0000},                 // tie with zero: even
      {3 * std::ldexp(1.f, -25), 0x0002},             // tie 1.5 ulp: even
      {std::ldexp(1.f, -14), 0x0400},                 // smallest normal
      {std::ldexp(1.f, -14) - std::ldexp(1.f, -25), 0x0400},  // rounds up into the normals
      {-0.f, 0x8000},
  };
  std::vector<float> f;
  for (const auto& c : cases) f.push_back(c.first);
  // Then random bit patterns over the whole float range, checked against yoloc/half.h.
  std::mt19937 rng(3);
  const size_t hand = f.size();
  for (int i = 0; i < 100000; ++i) {
    const uint32_t bits = rng();
    float v;
    std::memcpy(&v, &bits, 4);
    f.push_back(v);
  }
  CastKernel k(DType::kFloat32, DType::kFloat16, static_cast<int64_t>(f.size()));
  std::vector<uint16_t> h(f.size(), 0xffff);
  k.run(f.data(), h.data());
  for (size_t i = 0; i < hand; ++i) {
    EXPECT_EQ(h[i], cases[i].second) << "float " << cases[i].first;
  }
  int bad = 0;
  for (size_t i = hand; i < f.size(); ++i) {
    const uint16_t want = float_to_half_bits(f[i]);
    const bool nan = std::isnan(f[i]);
    const bool ok = nan ? (h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff) != 0 : h[i] == want;
    if (!ok && bad++ < 5) ADD_FAILURE() << "float " << f[i] << ": got 0x" << std::hex << h[i];
  }
  EXPECT_EQ(bad, 0);
  const std::vector<float> nan = {NAN};
  CastKernel one(DType::kFloat32, DType::kFloat16, 1);
  uint16_t hn = 0;
  one.run(nan.data(), &hn);
  EXPECT_EQ(hn & 0x7c00, 0x7c00);
  EXPECT_NE(hn & 0x3ff, 0);
}

}  // namespace
}  // namespace yoloc::codegen::cpu
