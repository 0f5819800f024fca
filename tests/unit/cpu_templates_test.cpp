// The CPU templates other than dense conv (depthwise conv, max-pool / SPPF / SPP, nearest
// resize, elementwise chains, detect tail): groups made by the optimizer (target "cpu") from
// small graphs and from the shared models, each x several schedule configs, built into one
// shared object per test and compared with the group's nodes run by the reference executor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include "codegen/cpu/dwconv_template.h"
#include "codegen/cpu/elementwise_template.h"
#include "codegen/cpu/host_compiler.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "codegen/cpu/pool_template.h"
#include "codegen/cpu/resize_template.h"
#include "codegen/cpu/tail_template.h"
#include "frontend/onnx/importer.h"
#include "cpu_test_util.h"
#include "graph_builder.h"
#include "passes/pipeline.h"

namespace yoloc::codegen::cpu {
namespace {

using testing::input;
using testing::node;
using testing::random_tensor;

// One kernel of the IR-driven ABI to check: its group, the arrays it takes and makes.
struct Case {
  const Graph* g;
  GroupIO io;
  std::vector<const Value*> args;
  CpuKernel kernel;
  std::string what;
};

// Builds all cases into one shared object, runs each on random activations with 2 threads and
// compares every output with the reference run of the group's nodes.
void run_cases(const std::vector<Case>& cases) {
  ASSERT_FALSE(cases.empty());
  std::string source;
  for (const Case& c : cases) source += c.kernel.source;
  const SharedObject so = compile_shared_object(source);
  runtime::KernelLibrary lib(so.bytes);
  runtime::ThreadPool pool(2);
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto ref = subgraph(c.io);
    std::map<std::string, Tensor> feeds;
    std::map<const Value*, std::vector<float>> held;
    for (const Value* v : c.io.inputs) {
      if (v->is_constant()) continue;
      const Tensor t = random_tensor(v->type.static_shape(), seed++, -3.f, 3.f);
      feeds[v->name] = t;
      held[v] = to_layout(v, t);
    }
    std::vector<const float*> in;
    for (const Value* v : c.args)
      in.push_back(v->is_constant() ? v->data.data<float>() : held[v].data());
    std::vector<std::vector<float>> outs;
    std::vector<float*> out;
    for (const Value* v : c.io.outputs) outs.emplace_back(shape_numel(v->type.static_shape()), NAN);
    for (auto& o : outs) out.push_back(o.data());
    using Fn = void (*)(const float* const*, float* const*, int64_t, int64_t);
    const auto fn = reinterpret_cast<Fn>(lib.symbol(c.kernel.symbol));
    pool.parallel_for(c.kernel.work_items,
                      [&](int64_t b, int64_t e) { fn(in.data(), out.data(), b, e); });
    const auto want = run_reference(*ref, feeds);
    for (size_t i = 0; i < outs.size(); ++i) {
      expect_close(from_layout(c.io.outputs[i], outs[i]), want[i].tensor, c.what);
    }
  }
}

std::vector<const FusedGroup*> groups_of(const Graph& g, GroupKind kind) {
  std::vector<const FusedGroup*> out;
  for (const FusedGroup& grp : g.groups) {
    if (grp.kind == kind) out.push_back(&grp);
  }
  return out;
}

// Cases for every config of `space` whose index is in `picks` (and valid), plus the default.
template <class T, class Task>
void add_cases(std::vector<Case>& cases, const Graph& g, const FusedGroup& grp, const Task& t,
               const std::vector<const Value*>& args, const std::vector<ScheduleConfig>& extra) {
  std::vector<ScheduleConfig> cfgs = {T::default_config(t)};
  for (const ScheduleConfig& c : extra) {
    if (T::valid(t, c) && !(c == cfgs[0])) cfgs.push_back(c);
  }
  for (const ScheduleConfig& cfg : cfgs) {
    const std::string sym = "k" + std::to_string(cases.size());
    cases.push_back(
        {&g, group_io(g, grp), args, T::emit(t, cfg, sym), grp.name + " | " + cfg.str()});
  }
}

Attrs conv_attrs(int64_t k, int64_t stride, int64_t pad, int64_t group) {
  Attrs a = testing::conv_attrs(k, pad, group);
  a.set("strides", std::vector<int64_t>{stride, stride});
  return a;
}

Value* conv(Graph& g, Value* x, int64_t out_c, int64_t k, int64_t stride, int64_t group,
            uint32_t seed) {
  const int64_t in_c = x->type.dims[1].value;
  Value* w = g.add_constant("w", random_tensor({out_c, in_c / group, k, k}, seed));
  Value* b = g.add_constant("b", random_tensor({out_c}, seed + 1));
  return node(g, "Conv", {x, w, b}, conv_attrs(k, stride, k / 2, group));
}

// --- depthwise conv: its own ABI (the conv one) ---

// Built for each ISA the host runs (its vector operations, build flags and default tile differ).
// The 5x5 pad-2 residual group of a batch of 2 at one column per tile is the case GCC 12's loop
// vectorizer miscompiled in an earlier kernel (a `while` search for the in-bounds columns
// inside the vectorised tap loop).
class CpuTemplatesDepthwise : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(CpuTemplatesDepthwise, MatchesReference) {
  const CpuIsa isa = GetParam();
  if (!host_can_run(isa)) GTEST_SKIP() << "this machine does not run " << isa_name(isa);
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {2, 8, 13, 11});
  Value* a = node(*g, "SiLU", {conv(*g, x, 32, 1, 1, 1, 1)});    // blocked, 32
  Value* d1 = node(*g, "SiLU", {conv(*g, a, 32, 3, 1, 32, 3)});  // 3x3 s1
  Value* d2 = node(*g, "Add", {node(*g, "Relu", {conv(*g, d1, 32, 5, 1, 32, 5)}), a});
  Value* d3 = conv(*g, d2, 32, 3, 2, 32, 7);  // 3x3 s2
  Value* p = conv(*g, x, 8, 3, 1, 8, 9);      // plain, 8
  // 3x3 dilated by 2 (pad 2) and 5x5 s2: taps two columns apart, tiles that span the row.
  Attrs dil = conv_attrs(3, 1, 2, 32);
  dil.set("dilations", std::vector<int64_t>{2, 2});
  Value* d4 = node(*g, "Conv",
                   {d2, g->add_constant("wd", random_tensor({32, 1, 3, 3}, 15)),
                    g->add_constant("bd", random_tensor({32}, 16))},
                   dil);
  Value* d5 = node(*g, "Add", {node(*g, "SiLU", {conv(*g, d4, 32, 5, 2, 32, 17)}), d3});
  g->outputs = {conv(*g, d5, 16, 1, 1, 1, 11), conv(*g, p, 16, 1, 1, 1, 13)};
  g = optimized(std::move(g));
  struct DwCase {
    ConvTask t;
    ScheduleConfig cfg;
    GroupIO io;
    CpuKernel k;
  };
  std::vector<DwCase> cases;
  std::string source;
  for (const FusedGroup* grp : groups_of(*g, GroupKind::kAnchor)) {
    auto t = conv_task_from_group(*g, *grp);
    if (!t || !DwConvTemplate::matches(*t)) continue;
    t->isa = isa;
    // Tiles of one column, ragged tails, a tile as wide as the row, the widest tile.
    for (int64_t owb : {0, 1, 3, 4, 5, 11, 16}) {
      const ScheduleConfig cfg =
          owb == 0 ? DwConvTemplate::default_config(*t) : ScheduleConfig({{"owb", owb}});
      if (!DwConvTemplate::valid(*t, cfg)) continue;
      cases.push_back({*t, cfg, group_io(*g, *grp),
                       DwConvTemplate::emit(*t, cfg, "dw" + std::to_string(cases.size()))});
      source += cases.back().k.source;
    }
  }
  ASSERT_GE(cases.size(), 20u);  // 6 depthwise groups x 3-7 configs
  const SharedObject so = compile_shared_object(source, host_compiler_options_for("c++", isa));
  runtime::KernelLibrary lib(so.bytes);
  runtime::ThreadPool pool(2);
  for (const DwCase& c : cases) {
    SCOPED_TRACE(c.t.key() + " | " + c.cfg.str());
    const Node& cv = *c.io.nodes[0];
    const Value* xin = cv.input(0);
    const Value* res = c.t.residual ? c.io.inputs[1] : nullptr;
    auto ref = subgraph(c.io);
    std::map<std::string, Tensor> feeds;
    feeds[xin->name] = random_tensor(xin->type.static_shape(), 21, -3.f, 3.f);
    if (res) feeds[res->name] = random_tensor(res->type.static_shape(), 22);
    const auto xv = to_layout(xin, feeds[xin->name]);
    const auto rv = res ? to_layout(res, feeds[res->name]) : std::vector<float>{};
    const auto w = DwConvTemplate::pack_weights(c.t, cv.input(1)->data.data<float>());
    std::vector<float> out(shape_numel(c.io.outputs[0]->type.static_shape()), NAN);
    using Fn =
        void (*)(const float*, const float*, const float*, const float*, float*, int64_t, int64_t);
    const auto fn = reinterpret_cast<Fn>(lib.symbol(c.k.symbol));
    pool.parallel_for(c.k.work_items, [&](int64_t b, int64_t e) {
      fn(xv.data(), w.data(), cv.input(2)->data.data<float>(), rv.data(), out.data(), b, e);
    });
    expect_close(from_layout(c.io.outputs[0], out), run_reference(*ref, feeds)[0].tensor,
                 c.t.key());
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, CpuTemplatesDepthwise,
                         ::testing::Values(detect_host_isa(), CpuIsa::kAvx2, CpuIsa::kGeneric),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "host_" : "") +
                                  isa_name(info.param);
                         });

// --- pooling ---

Value* maxpool(Graph& g, Value* x, int64_t k, int64_t s, int64_t p) {
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{s, s});
  a.set("pads", std::vector<int64_t>{p, p, p, p});
  return node(g, "MaxPool", {x}, a);
}

std::vector<ScheduleConfig> pool_configs() {
  return {ScheduleConfig({{"separable", 0}}), ScheduleConfig({{"separable", 1}})};
}

TEST(CpuTemplates, MaxPoolSppfAndSpp) {
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {2, 3, 11, 13});
  Value* a = conv(*g, x, 32, 3, 1, 1, 1);
  Value* p1 = maxpool(*g, a, 5, 1, 2);
  Value* p2 = maxpool(*g, p1, 5, 1, 2);
  Value* p3 = maxpool(*g, p2, 5, 1, 2);
  Attrs cat;
  cat.set("axis", int64_t{1});
  Value* sppf = node(*g, "Concat", {a, p1, p2, p3}, cat);
  Value* b = conv(*g, x, 16, 1, 1, 1, 3);
  Value* spp =
      node(*g, "Concat",
           {b, maxpool(*g, b, 5, 1, 2), maxpool(*g, b, 9, 1, 4), maxpool(*g, b, 13, 1, 6)}, cat);
  Value* s2 = maxpool(*g, conv(*g, x, 16, 1, 1, 1, 5), 3, 2, 1);  // blocked, stride 2
  Value* plain = maxpool(*g, x, 2, 2, 0);                         // plain NCHW
  g->outputs = {conv(*g, sppf, 16, 1, 1, 1, 7), conv(*g, spp, 16, 1, 1, 1, 9),
                conv(*g, s2, 16, 1, 1, 1, 11), conv(*g, plain, 16, 1, 1, 1, 13)};
  g = optimized(std::move(g));
  std::vector<Case> cases;
  int sppf_groups = 0;
  for (const FusedGroup& grp : g->groups) {
    const auto t = pool_task_from_group(*g, grp);
    if (!t) continue;
    sppf_groups += grp.kind == GroupKind::kSppf;
    ASSERT_TRUE(PoolTemplate::matches(*t)) << t->key();
    add_cases<PoolTemplate>(cases, *g, grp, *t, {group_io(*g, grp).inputs[0]}, pool_configs());
  }
  EXPECT_EQ(sppf_groups, 2);
  EXPECT_EQ(cases.size(), 8u);  // 4 groups x 2 configs
  run_cases(cases);
}

TEST(CpuTemplates, SppfOfYolov8n) {
  auto g = shared_model("yolov8n.onnx");
  if (!g) GTEST_SKIP() << "no yolov8n.onnx";
  const auto sppf = groups_of(*g, GroupKind::kSppf);
  ASSERT_EQ(sppf.size(), 1u);
  const auto t = pool_task_from_group(*g, *sppf[0]);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->key(),
            "maxpool_f32 n1 c128 h20 w20 nchw16c copy 5x5s1x1p2x2 9x9s1x1p4x4 13x13s1x1p6x6");
  std::vector<Case> cases;
  add_cases<PoolTemplate>(cases, *g, *sppf[0], *t, {group_io(*g, *sppf[0]).inputs[0]},
                          pool_configs());
  run_cases(cases);
}

// --- resize ---

TEST(CpuTemplates, NearestIndices) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(nearest_indices(3, 6, 2.0, "asymmetric", "floor"), (V{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(nearest_indices(3, 6, 2.0, "half_pixel", "round_prefer_floor"), (V{0, 0, 1, 1, 2, 2}));
  // align_corners 3 -> 5: x = 0, .5, 1, 1.5, 2.
  EXPECT_EQ(nearest_indices(3, 5, 5.0 / 3, "align_corners", "round_prefer_floor"),
            (V{0, 0, 1, 1, 2}));
  EXPECT_EQ(nearest_indices(3, 5, 5.0 / 3, "align_corners", "round_prefer_ceil"),
            (V{0, 1, 1, 2, 2}));
  // asymmetric 4 -> 2 (downscale 0.5): x = 0, 2; ceil of 4 -> 3 (scale .75): 0, 1.33, 2.67.
  EXPECT_EQ(nearest_indices(4, 2, 0.5, "asymmetric", "floor"), (V{0, 2}));
  EXPECT_EQ(nearest_indices(4, 3, 0.75, "asymmetric", "ceil"), (V{0, 2, 3}));
  EXPECT_FALSE(nearest_indices(4, 3, 0.75, "bogus", "ceil"));
  // Opset 11's tf_half_pixel_for_nn (ONNX's spelling): sources (o + 0.5) / 2.
  EXPECT_EQ(nearest_indices(3, 6, 2.0, "tf_half_pixel_for_nn", "round_prefer_floor"),
            (V{0, 1, 1, 2, 2, 2}));
}

Value* resize(Graph& g, Value* x, float scale, const std::string& coord, const std::string& mode) {
  Tensor s(DType::kFloat32, {4});
  const float sv[4] = {1.f, 1.f, scale, scale};
  std::copy(sv, sv + 4, s.data<float>());
  Attrs a;
  a.set("mode", std::string("nearest"));
  a.set("coordinate_transformation_mode", coord);
  a.set("nearest_mode", mode);
  return node(g, "Resize", {x, nullptr, g.add_constant("scales", s)}, a);
}

TEST(CpuTemplates, NearestResize) {
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {2, 5, 7, 6});
  Value* a = conv(*g, x, 32, 1, 1, 1, 1);
  Value* up = resize(*g, a, 2.f, "asymmetric", "floor");
  Attrs cat;
  cat.set("axis", int64_t{1});
  Value* y = input(*g, "y", {2, 5, 14, 12});
  Value* joined = node(*g, "Concat", {conv(*g, y, 16, 1, 1, 1, 3), up}, cat);
  Value* odd = resize(*g, conv(*g, x, 16, 1, 1, 1, 5), 1.5f, "half_pixel", "round_prefer_ceil");
  Value* plain = resize(*g, x, 2.f, "asymmetric", "floor");
  g->outputs = {conv(*g, joined, 16, 1, 1, 1, 7), conv(*g, odd, 16, 1, 1, 1, 9),
                conv(*g, plain, 16, 1, 1, 1, 11)};
  g = optimized(std::move(g));
  std::vector<Case> cases;
  int in_concat = 0;
  std::optional<ResizeTask> sliced;
  const FusedGroup* sliced_group = nullptr;
  const std::vector<ScheduleConfig> cfgs = {ScheduleConfig({{"unroll", 1}}),
                                            ScheduleConfig({{"unroll", 8}})};
  for (const FusedGroup& grp : g->groups) {
    const auto t = resize_task_from_group(*g, grp);
    if (!t) continue;
    ASSERT_TRUE(ResizeTemplate::matches(*t)) << t->key();
    // Written straight into a concat slice the images lie a whole concat apart; the test runs
    // the kernel on a dense buffer, so it checks the dense ones only and the stride separately.
    if (t->out_batch_stride != t->c * t->oh * t->ow) {
      EXPECT_EQ(t->out_batch_stride, (16 + 32) * t->oh * t->ow) << t->key();
      ++in_concat;
      sliced = t, sliced_group = &grp;
      ResizeTask dense = *t;
      dense.out_batch_stride = t->c * t->oh * t->ow;
      add_cases<ResizeTemplate>(cases, *g, grp, dense, {group_io(*g, grp).inputs[0]}, cfgs);
      continue;
    }
    add_cases<ResizeTemplate>(cases, *g, grp, *t, {group_io(*g, grp).inputs[0]}, cfgs);
  }
  EXPECT_EQ(in_concat, 1);
  EXPECT_EQ(cases.size(), 8u);  // 3 resizes x the default and 1-2 other configs
  run_cases(cases);

  // The resize into its concat slice for real: both images into a 48-channel NCHW16c buffer
  // behind the 16 channels of the conv, which must stay untouched.
  ASSERT_TRUE(sliced);
  const GroupIO io = group_io(*g, *sliced_group);
  const CpuKernel k = ResizeTemplate::emit(*sliced, ResizeTemplate::default_config(*sliced), "rs");
  const SharedObject so = compile_shared_object(k.source);
  runtime::KernelLibrary lib(so.bytes);
  const Value* xv = io.inputs[0];
  const Tensor xt = random_tensor(xv->type.static_shape(), 99, -3.f, 3.f);
  const auto xin = to_layout(xv, xt);
  const int64_t plane = sliced->oh * sliced->ow * kBlock, blocks = 3;
  std::vector<float> buf(static_cast<size_t>(sliced->n * blocks * plane), NAN);
  const float* ins[] = {xin.data()};
  float* outs[] = {buf.data() + plane};
  runtime::ThreadPool pool(2);
  using Fn = void (*)(const float* const*, float* const*, int64_t, int64_t);
  const auto fn = reinterpret_cast<Fn>(lib.symbol("rs"));
  pool.parallel_for(k.work_items, [&](int64_t b, int64_t e) { fn(ins, outs, b, e); });
  std::vector<float> mine;
  for (int64_t n = 0; n < sliced->n; ++n) {
    EXPECT_TRUE(std::isnan(buf[static_cast<size_t>(n * blocks * plane)]));
    const auto first = buf.begin() + (n * blocks + 1) * plane;
    mine.insert(mine.end(), first, first + 2 * plane);
  }
  const auto want = run_reference(*subgraph(io), {{xv->name, xt}});
  expect_close(from_layout(io.outputs[0], mine), want[0].tensor, "resize into a concat slice");
}

// --- elementwise chains ---

TEST(CpuTemplates, ElementwiseChains) {
  auto g = std::make_unique<Graph>();
  // Blocked: a conv output read by another conv and by a chain with broadcast constants.
  Value* x = input(*g, "x", {2, 3, 6, 7});
  Value* a = conv(*g, x, 32, 3, 1, 1, 1);
  Value* b = conv(*g, x, 32, 1, 1, 1, 3);
  Value* per_c = g->add_constant("pc", random_tensor({1, 32, 1, 1}, 5, 0.5f, 2.f));
  Value* per_w = g->add_constant("pw", random_tensor({7}, 6, 0.5f, 2.f));
  Value* e = node(*g, "Sigmoid", {a});
  e = node(*g, "Mul", {e, per_c});
  e = node(*g, "Add", {e, b});
  e = node(*g, "Div", {e, per_w});
  e = node(*g, "Sub", {e, g->add_constant("one", random_tensor({1}, 7))});
  e = node(*g, "Tanh", {e});
  // Plain: 12 channels, activations broadcast against each other. The result feeds a conv: a
  // chain feeding only graph outputs would be taken for a detect tail.
  Value* p = input(*g, "p", {1, 12, 5, 5});
  Value* q = input(*g, "q", {1, 1, 5, 5});
  Value* f = node(*g, "Relu", {node(*g, "Add", {p, q})});
  Attrs lr;
  lr.set("alpha", 0.2f);
  f = node(*g, "LeakyRelu",
           {node(*g, "Sub", {f, g->add_constant("h", random_tensor({12, 1, 1}, 8))})}, lr);
  f = node(*g, "HardSwish", {f});
  g->outputs = {conv(*g, e, 16, 1, 1, 1, 9), conv(*g, a, 16, 1, 1, 1, 11),
                conv(*g, b, 16, 1, 1, 1, 13), conv(*g, f, 16, 1, 1, 1, 15)};
  g = optimized(std::move(g));
  std::vector<Case> cases;
  int blocked_groups = 0;
  for (const FusedGroup* grp : groups_of(*g, GroupKind::kElementwise)) {
    const auto t = elementwise_task_from_group(*g, *grp);
    ASSERT_TRUE(t) << grp->name;
    blocked_groups += t->blocked;
    add_cases<ElementwiseTemplate>(
        cases, *g, *grp, *t, t->io.inputs,
        {ScheduleConfig({{"unroll", 1}}), ScheduleConfig({{"unroll", 16}})});
  }
  EXPECT_EQ(blocked_groups, 1);
  EXPECT_GE(cases.size(), 4u);
  run_cases(cases);
}

// --- detect tails ---

void check_tail(const std::string& model, int64_t want_nodes) {
  auto g = shared_model(model);
  if (!g) GTEST_SKIP() << "no " << model;
  const auto tails = groups_of(*g, GroupKind::kDetectTail);
  ASSERT_EQ(tails.size(), 1u);
  const auto t = tail_task_from_group(*g, *tails[0]);
  ASSERT_TRUE(t) << model;
  EXPECT_GE(static_cast<int64_t>(t->io.nodes.size()), want_nodes);
  std::vector<Case> cases;
  add_cases<TailTemplate>(cases, *g, *tails[0], *t, t->args, {ScheduleConfig({{"unroll", 1}})});
  run_cases(cases);
}

TEST(CpuTemplates, DetectTailOfYolov8n) { check_tail("yolov8n.onnx", 20); }
TEST(CpuTemplates, DetectTailOfYoloxNano) { check_tail("yolox-nano-facemask.onnx", 4); }

// Every kernel group of the two models has a template that takes it.
TEST(CpuTemplates, EveryGroupOfTheModelsHasAKernel) {
  for (const char* model : {"yolov8n.onnx", "yolox-nano-facemask.onnx"}) {
    auto g = shared_model(model);
    if (!g) continue;
    int depthwise = 0;
    for (const FusedGroup& grp : g->groups) {
      if (!grp.is_kernel()) continue;
      const auto conv = conv_task_from_group(*g, grp);
      depthwise += conv && DwConvTemplate::matches(*conv);
      const bool ok = (conv && (ConvTemplate::matches(*conv) || DwConvTemplate::matches(*conv))) ||
                      pool_task_from_group(*g, grp) || resize_task_from_group(*g, grp) ||
                      elementwise_task_from_group(*g, grp) || tail_task_from_group(*g, grp);
      EXPECT_TRUE(ok) << model << ": group " << grp.id << " " << grp.name;
    }
    if (std::string(model).find("yolox") != std::string::npos) {
      EXPECT_EQ(depthwise, 30);
    }
  }
}

}  // namespace
}  // namespace yoloc::codegen::cpu
