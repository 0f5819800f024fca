// The targets behind one interface: the registry, the attributes the passes read, and the
// compile library's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "graph_builder.h"
#include "passes/float_compute.h"
#include "passes/layout_selection.h"
#include "passes/storage_precision.h"
#include "targets/target.h"
#include "yoloc/compiler.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Targets, RegisteredOnceEach) {
  const std::vector<std::string> names = targets::target_names();
  EXPECT_TRUE(has(names, "cpu"));
#ifdef YOLOC_HAVE_CUDA
  EXPECT_TRUE(has(names, "cuda"));
#else
  EXPECT_FALSE(has(names, "cuda"));
#endif
  EXPECT_EQ(compile_targets(), names);
  for (const std::string& n : names) EXPECT_EQ(targets::find_target(n).name(), n);
}

TEST(Targets, AnUnknownTargetIsRefusedWithTheBuildsTargets) {
  const std::string why = user_error_of([] { targets::find_target("tpu"); });
  EXPECT_NE(why.find("--target tpu"), std::string::npos) << why;
  EXPECT_NE(why.find("cpu"), std::string::npos) << why;
  EXPECT_NE(user_error_of([] { targets::attributes("cpu-sse2"); }), "");
  EXPECT_NE(user_error_of([] { targets::attributes("tpu-v4"); }), "");
}

TEST(Targets, AttributesOfTheCpuAndItsVariants) {
  EXPECT_EQ(targets::attributes("reference").layout, LayoutSpec{});
  EXPECT_EQ(targets::attributes("cpu").layout, (LayoutSpec{Layout::kNCHWc, 16}));
  EXPECT_EQ(targets::attributes("cpu-avx2").layout, (LayoutSpec{Layout::kNCHWc, 8}));
  EXPECT_EQ(targets::attributes("cpu-neon").vector_width, 4);
  EXPECT_FALSE(targets::attributes("cpu").stores_narrow(Precision::kFp16));
#ifdef YOLOC_HAVE_CUDA
  const TargetAttributes cuda = targets::attributes("cuda");
  EXPECT_EQ(cuda.layout, (LayoutSpec{Layout::kNHWC, 0}));
  EXPECT_TRUE(cuda.stores_narrow(Precision::kBf16));
  EXPECT_FALSE(cuda.stores_narrow(Precision::kFp32));
  EXPECT_TRUE(cuda.gpu_detect);
#endif
}

// A target the passes have never heard of: they lay out and narrow by its attributes alone.
TEST(Targets, PassesFollowTheAttributesOfATargetTheyDoNotKnow) {
  Graph g;
  Value* x = input(g, "x", {1, 8, 8, 8});
  Value* a = node(g, "SiLU", {conv(g, x, 8, 8, 3, 1)});
  g.outputs.push_back(node(g, "Flatten", {conv(g, a, 8, 8, 1, 2)}, Attrs{}));
  PassContext ctx;
  ctx.target.name = "some-gpu";
  ctx.target.layout = {Layout::kNCHWc, 4};
  EXPECT_TRUE(LayoutSelection().run(g, ctx));
  EXPECT_EQ(a->layout.str(), "NCHW4c");

  Graph h;
  Value* y = input(h, "y", {1, 4, 4, 4});
  h.outputs.push_back(node(h, "Relu", {conv(h, node(h, "Relu", {y}), 4, 4, 1, 3)}));
  PassContext half;
  half.precision = Precision::kFp16;
  EXPECT_FALSE(StoragePrecision().run(h, half));  // no narrow storage: nothing stored fp16
  half.target.name = "some-gpu";
  half.target.narrow_storage = {Precision::kFp16};
  EXPECT_TRUE(StoragePrecision().run(h, half));
}

TEST(CompileLibrary, RefusesAnOutputThatIsNoArtifactOrExists) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "yoloc-compile-lib";
  std::filesystem::create_directories(dir);
  CompileOptions o;
  o.output = (dir / "model.onnx").string();
  EXPECT_NE(user_error_of([&] { compile("missing.onnx", o); }).find(".ycm"), std::string::npos);
  o.output = (dir / "kept.ycm").string();
  std::ofstream(o.output) << "the user's file";
  EXPECT_NE(user_error_of([&] { compile("missing.onnx", o); }).find("--force"),
            std::string::npos);
  std::ifstream in(o.output);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "the user's file");
  o.target = "tpu";
  o.force = true;
  EXPECT_NE(user_error_of([&] { compile("missing.onnx", o); }).find("tpu"), std::string::npos);
  std::filesystem::remove_all(dir);
}
