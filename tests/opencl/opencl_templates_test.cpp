// The OpenCL templates on a real OpenCL implementation (PoCL in CI): small graphs optimized for
// target "opencl", compiled, written as artifacts and run by the runtime's OpenCL executor,
// each output compared with the reference executor on the unoptimized graph within 1e-4 of its
// own scale; the conv template over several configs of its space. Skips where no OpenCL device
// is there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "artifact/artifact_writer.h"
#include "codegen/cpu/emit_util.h"
#include "codegen/opencl/opencl_compiler.h"
#include "codegen/opencl/tasks.h"
#include "graph_builder.h"
#include "passes/pipeline.h"
#include "runtime/opencl/opencl_executor.h"
#include "targets/opencl/opencl_attributes.h"

namespace yoloc {
namespace {

namespace fs = std::filesystem;
using testing::input;
using testing::node;
using testing::random_tensor;

bool have_device() {
  try {
    return !runtime::opencl::list_devices().empty();
  } catch (const UserError&) {
    return false;
  }
}

/// Builds the same graph twice: one kept for the reference, one optimized and compiled.
using Builder = std::function<void(Graph&)>;

std::unique_ptr<Graph> built(const Builder& b) {
  auto g = std::make_unique<Graph>();
  b(*g);
  return g;
}

void optimize_for_opencl(Graph& g) {
  PassContext ctx;
  ctx.target = targets::opencl_attributes();
  ctx.precision = Precision::kFp32;
  optimize(g, ctx);
}

/// The templates serving the graph's groups, in run order.
std::vector<std::string> templates_of(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& t : codegen::opencl::extract_opencl_tasks(
           g, [&](const Value* v) { return codegen::cpu::dense_strides(v->type.static_shape()); }))
    out.push_back(t.template_name);
  return out;
}

/// Max |got - want| / max|want| over every output.
void expect_matches_reference(const Builder& b, const std::map<std::string, codegen::ScheduleConfig>& configs = {}) {
  auto ref_graph = built(b);
  auto g = built(b);
  optimize_for_opencl(*g);
  std::map<std::string, Tensor> feeds;
  std::vector<Tensor> inputs;
  uint32_t seed = 11;
  for (const Value* v : ref_graph->inputs) {
    feeds[v->name] = random_tensor(v->type.static_shape(), seed++, -2.f, 2.f);
    inputs.push_back(feeds[v->name]);
  }
  const auto want = run_reference(*ref_graph, feeds);
  const codegen::opencl::OpenClBuild build = codegen::opencl::compile_opencl(*g, configs);
  artifact::Manifest m;
  m.tool_version = "test";
  m.target = "opencl";
  m.precision = "fp32";
  for (const Value* v : g->inputs) m.inputs.push_back({v->name, "float32", v->type.static_shape()});
  for (const Value* v : g->outputs)
    m.outputs.push_back({v->name, "float32", v->type.static_shape()});
  m.program = artifact::program_to_json(build.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::opencl::kWeightsBlob, "weights", build.weights);
  w.add_blob(codegen::opencl::kSourceBlob, "kernel_source", build.source);
  const std::string path =
      (fs::temp_directory_path() / ("yoloc_opencl_test_" + std::to_string(::getpid()) + ".ycm"))
          .string();
  w.write(path);
  auto art = std::make_shared<const artifact::Artifact>(artifact::Artifact::open(path));
  fs::remove(path);
  runtime::opencl::OpenClExecutor exec(art, 0);
  const std::vector<Tensor> got = exec.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const auto x = got[i].to_doubles(), y = want[i].tensor.to_doubles();
    ASSERT_EQ(x.size(), y.size());
    double scale = 1e-6, diff = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      scale = std::max(scale, std::abs(y[k]));
      diff = std::max(diff, std::isnan(x[k]) ? INFINITY : std::abs(x[k] - y[k]));
    }
    EXPECT_LE(diff / scale, 1e-4) << "output " << want[i].name;
  }
}

Value* conv_node(Graph& g, Value* x, int64_t c, int64_t k, int64_t kernel, int64_t stride,
                 int64_t group, uint32_t seed) {
  Value* w = g.add_constant("w", random_tensor({k, c / group, kernel, kernel}, seed));
  Value* b = g.add_constant("b", random_tensor({k}, seed + 1));
  Attrs a = testing::conv_attrs(kernel, kernel / 2, group);
  a.set("strides", std::vector<int64_t>{stride, stride});
  return node(g, "Conv", {x, w, b}, a);
}

Value* silu(Graph& g, Value* x) { return node(g, "Mul", {x, node(g, "Sigmoid", {x})}); }

class OpenCl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_device()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  }
};

/// Conv + bias + SiLU + residual, the shapes of a C2f bottleneck.
void bottleneck(Graph& g) {
  Value* x = input(g, "x", {1, 8, 13, 11});
  Value* a = silu(g, conv_node(g, x, 8, 24, 1, 1, 1, 1));
  Value* y = silu(g, conv_node(g, a, 24, 24, 3, 1, 1, 3));
  g.outputs.push_back(silu(g, conv_node(g, node(g, "Add", {a, y}), 24, 16, 1, 1, 1, 5)));
}

TEST_F(OpenCl, ConvTemplateOverItsSpace) {
  auto g = built(bottleneck);
  optimize_for_opencl(*g);
  // The 3x3 conv takes the residual Add in its epilogue.
  ASSERT_EQ(templates_of(*g), (std::vector<std::string>{"conv", "conv", "conv"}));
  const auto task = codegen::opencl::extract_opencl_tasks(*g, [](const Value* v) {
    return codegen::cpu::dense_strides(v->type.static_shape());
  })[1];
  EXPECT_NE(task.key.find(" silu add"), std::string::npos) << task.key;
  int tried = 0;
  for (const auto& cfg : std::vector<codegen::ScheduleConfig>{
           task.default_config,
           {{{"tm", 16}, {"tn", 32}, {"tk", 8}, {"rm", 2}, {"rn", 2}}},
           {{{"tm", 32}, {"tn", 128}, {"tk", 32}, {"rm", 2}, {"rn", 8}}},
           {{{"tm", 64}, {"tn", 64}, {"tk", 8}, {"rm", 8}, {"rn", 4}}}}) {
    SCOPED_TRACE(cfg.str());
    ASSERT_TRUE(task.valid(cfg));
    expect_matches_reference(bottleneck, {{task.key, cfg}});
    ++tried;
  }
  EXPECT_EQ(tried, 4);
}

TEST_F(OpenCl, ConvStridedAndPointwiseIntoAConcat) {
  // Two convs written as channel slices of one concat buffer (the views pass), a strided 3x3
  // and a 1x1 whose output channels are no multiple of any tile.
  const Builder b = [](Graph& g) {
    Value* x = input(g, "x", {1, 5, 17, 19});
    Value* a = silu(g, conv_node(g, x, 5, 40, 3, 2, 1, 1));
    Value* c = conv_node(g, a, 40, 7, 1, 1, 1, 5);
    Value* d = silu(g, conv_node(g, a, 40, 9, 3, 1, 1, 7));
    Attrs axis;
    axis.set("axis", int64_t{1});
    g.outputs.push_back(node(g, "Concat", {c, d}, axis));
  };
  auto g = built(b);
  optimize_for_opencl(*g);
  const std::vector<std::string> t = templates_of(*g);
  EXPECT_EQ(std::count(t.begin(), t.end(), "conv"), 3);
  expect_matches_reference(b);
}

/// A depthwise conv (stride 2, SiLU) at batch 2, then a residual depthwise conv.
void depthwise(Graph& g) {
  Value* x = input(g, "x", {2, 16, 19, 37});
  Value* y = silu(g, conv_node(g, x, 16, 16, 3, 2, 16, 3));
  g.outputs.push_back(node(g, "Add", {y, conv_node(g, y, 16, 16, 5, 1, 16, 5)}));
}

TEST_F(OpenCl, DwConvTemplateOverItsSpace) {
  auto g = built(depthwise);
  optimize_for_opencl(*g);
  ASSERT_EQ(templates_of(*g), (std::vector<std::string>{"dwconv", "dwconv"}));
  const auto tasks = codegen::opencl::extract_opencl_tasks(*g, [](const Value* v) {
    return codegen::cpu::dense_strides(v->type.static_shape());
  });
  for (const auto& cfg : std::vector<codegen::ScheduleConfig>{
           tasks[0].default_config,
           {{{"lx", 8}, {"ly", 4}, {"rx", 1}}},
           {{{"lx", 32}, {"ly", 8}, {"rx", 4}}}}) {
    SCOPED_TRACE(cfg.str());
    ASSERT_TRUE(tasks[0].valid(cfg) && tasks[1].valid(cfg));
    expect_matches_reference(depthwise, {{tasks[0].key, cfg}, {tasks[1].key, cfg}});
  }
}

TEST_F(OpenCl, GenericGroupedConvAtBatch2) {
  const Builder b = [](Graph& g) {
    Value* x = input(g, "x", {2, 8, 9, 10});
    g.outputs.push_back(silu(g, conv_node(g, x, 8, 12, 3, 2, 4, 3)));
  };
  auto g = built(b);
  optimize_for_opencl(*g);
  EXPECT_EQ(templates_of(*g), std::vector<std::string>{"generic"});
  expect_matches_reference(b);
}

TEST_F(OpenCl, GenericSppfPoolsAndResize) {
  const Builder b = [](Graph& g) {
    Value* x = input(g, "x", {1, 8, 10, 10});
    Attrs p;
    p.set("kernel_shape", std::vector<int64_t>{5, 5});
    p.set("pads", std::vector<int64_t>{2, 2, 2, 2});
    p.set("strides", std::vector<int64_t>{1, 1});
    Value* y1 = node(g, "MaxPool", {x}, p);
    Value* y2 = node(g, "MaxPool", {y1}, p);
    Value* y3 = node(g, "MaxPool", {y2}, p);
    Attrs axis;
    axis.set("axis", int64_t{1});
    Value* cat = node(g, "Concat", {x, y1, y2, y3}, axis);
    Attrs r;
    r.set("mode", std::string("nearest"));
    r.set("coordinate_transformation_mode", std::string("asymmetric"));
    r.set("nearest_mode", std::string("floor"));
    Value* scales = g.add_constant("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
    Value* roi = g.add_constant("roi", Tensor::from_vector<float>({0}, {}));
    g.outputs.push_back(node(g, "Resize", {cat, roi, scales}, r));
  };
  expect_matches_reference(b);
}

TEST_F(OpenCl, GenericDetectTailOps) {
  // A DFL-like tail: reshape, transpose, softmax over 16 bins, a 1x1 conv of fixed weights,
  // slices, and elementwise arithmetic with broadcast constants.
  const Builder b = [](Graph& g) {
    Value* x = input(g, "x", {1, 64, 30});
    Value* shape = g.add_constant("shape", Tensor::from_vector<int64_t>({4}, {1, 4, 16, 30}));
    Value* r = node(g, "Reshape", {x, shape});
    Attrs perm;
    perm.set("perm", std::vector<int64_t>{0, 2, 1, 3});
    Value* t = node(g, "Transpose", {r}, perm);
    Attrs ax;
    ax.set("axis", int64_t{1});
    Value* s = node(g, "Softmax", {t}, ax);
    Value* w = g.add_constant("dfl", random_tensor({1, 16, 1, 1}, 5));
    Attrs ca = testing::conv_attrs(1, 0);
    Value* c = node(g, "Conv", {s, w}, ca);
    Value* shape2 = g.add_constant("shape2", Tensor::from_vector<int64_t>({3}, {1, 4, 30}));
    Value* d = node(g, "Reshape", {c, shape2});
    Value* st = g.add_constant("st", Tensor::from_vector<int64_t>({1}, {0}));
    Value* en = g.add_constant("en", Tensor::from_vector<int64_t>({1}, {2}));
    Value* axs = g.add_constant("axs", Tensor::from_vector<int64_t>({1}, {1}));
    Value* lt = node(g, "Slice", {d, st, en, axs});
    Value* anchors = g.add_constant("anchors", random_tensor({1, 2, 30}, 9));
    Value* half = g.add_constant("half", Tensor::from_vector<float>({}, {0.5f}));
    g.outputs.push_back(node(g, "Mul", {node(g, "Sub", {anchors, lt}), half}));
  };
  expect_matches_reference(b);
}

TEST_F(OpenCl, GenericAttentionMatMuls) {
  // softmax(q k^T) v of two heads, and a product with a broadcast 2-D operand.
  const Builder b = [](Graph& g) {
    Value* q = input(g, "q", {1, 2, 5, 8});
    Attrs perm;
    perm.set("perm", std::vector<int64_t>{0, 1, 3, 2});
    Value* kt = node(g, "Transpose", {q}, perm);
    Attrs ax;
    ax.set("axis", int64_t{-1});
    Value* p = node(g, "Softmax", {node(g, "MatMul", {q, kt})}, ax);
    Value* v = node(g, "MatMul", {p, q});
    Value* w = g.add_constant("w", random_tensor({8, 3}, 4));
    // Two outputs of one group: two launches, each storing its own.
    g.outputs.push_back(node(g, "MatMul", {v, w}));
    g.outputs.push_back(node(g, "Sigmoid", {v}));
  };
  expect_matches_reference(b);
}

}  // namespace
}  // namespace yoloc
