// The one ordered list of graph passes. Read it top to bottom: this is the optimizer.
#include "passes/pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/algebraic_simplify.h"
#include "passes/bn_folding.h"
#include "passes/canonicalize.h"
#include "passes/combine_parallel_conv.h"
#include "passes/constant_folding.h"
#include "passes/cse.h"
#include "passes/dead_code_elimination.h"
#include "passes/fake_quant_lowering.h"
#include "passes/float_compute.h"
#include "passes/fusion.h"
#include "passes/layout_selection.h"
#include "passes/quantization.h"
#include "passes/quantize_graph.h"
#include "passes/space_to_depth_conv.h"
#include "passes/storage_precision.h"
#include "passes/views.h"

namespace yoloc {

namespace {

bool optional_pass(const std::string& name) {
  return std::find(std::begin(kOptionalPasses), std::end(kOptionalPasses), name) !=
         std::end(kOptionalPasses);
}

// Every pass of the level, in order.
std::vector<std::unique_ptr<Pass>> all_passes(const PassContext& ctx) {
  std::vector<std::unique_ptr<Pass>> p;
  if (ctx.opt_level <= 0) return p;
  // Numerics first: at fp32, a float16 model computes in float32 (Casts at its edges).
  p.push_back(std::make_unique<FloatCompute>());
  // Clean-up: fold shape arithmetic and constants, remove identities and dead code.
  p.push_back(std::make_unique<ConstantFolding>());
  p.push_back(std::make_unique<AlgebraicSimplify>());
  p.push_back(std::make_unique<DeadCodeElimination>());
  p.push_back(std::make_unique<CommonSubexpressionElimination>());
  // Rewrites into the ops the kernels want.
  p.push_back(std::make_unique<Quantization>());
  p.push_back(std::make_unique<BatchNormFolding>());
  p.push_back(std::make_unique<Canonicalize>());
  p.push_back(std::make_unique<SpaceToDepthConv>());
  p.push_back(std::make_unique<CombineParallelConv>());
  p.push_back(std::make_unique<ConstantFolding>());
  p.push_back(std::make_unique<DeadCodeElimination>());
  // Post-training int8: quantize / dequantize around the calibrated convs, after the last
  // constant folding so that they stay; a kernel target runs them as float fake-quant.
  if (ctx.int8) {
    p.push_back(std::make_unique<QuantizeGraph>());
    if (!ctx.target.quantize_ops) p.push_back(std::make_unique<FakeQuantLowering>());
  }
  // Memory and kernels: layouts per target, views, then the partition into fused kernels (last:
  // it sees the final graph).
  p.push_back(std::make_unique<LayoutSelection>());
  p.push_back(std::make_unique<Views>());
  p.push_back(std::make_unique<Fusion>());
  // What the kernels store narrow (CUDA fp16 / bf16), before the memory plan sizes buffers.
  p.push_back(std::make_unique<StoragePrecision>());
  return p;
}

}  // namespace

std::vector<std::unique_ptr<Pass>> make_pipeline(const PassContext& ctx) {
  for (const std::string& d : ctx.disabled)
    if (!optional_pass(d))
      user_error("cannot disable pass '{}': the passes a compile may leave out are {}", d,
                 fmt::join(kOptionalPasses, ", "));
  std::vector<std::unique_ptr<Pass>> p = all_passes(ctx);
  std::erase_if(p, [&](const std::unique_ptr<Pass>& pass) {
    return std::find(ctx.disabled.begin(), ctx.disabled.end(), pass->name()) != ctx.disabled.end();
  });
  return p;
}

void optimize(Graph& g, PassContext& ctx) {
  if (const char* env = std::getenv("YOLOC_DISABLE_PASSES"); env && ctx.disabled.empty()) {
    std::stringstream names(env);
    for (std::string n; std::getline(names, n, ',');)
      if (!n.empty()) ctx.disabled.push_back(n);
  }
#ifndef NDEBUG
  const bool verify_each = true;
#else
  const bool verify_each = ctx.verify;
#endif
  auto passes = make_pipeline(ctx);
  if (!ctx.dump_dir.empty()) {
    std::filesystem::create_directories(ctx.dump_dir);
    std::ofstream(std::filesystem::path(ctx.dump_dir) / "00-input.txt") << print_graph(g);
  }
  int index = 1;
  for (auto& pass : passes) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool changed = pass->run(g, ctx);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ctx.stats.push_back({pass->name(), g.num_nodes(), ms, changed});
    if (!ctx.dump_dir.empty())
      std::ofstream(std::filesystem::path(ctx.dump_dir) /
                    fmt::format("{:02d}-{}.txt", index, pass->name()))
          << print_graph(g);
    if (verify_each) verify(g);
    ++index;
  }
}

size_t kernel_count(const Graph& g) {
  if (g.groups.empty()) return g.num_nodes();
  size_t k = 0;
  for (const FusedGroup& grp : g.groups) k += grp.is_kernel() ? 1 : 0;
  return k;
}

}  // namespace yoloc
