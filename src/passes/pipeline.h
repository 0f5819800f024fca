#pragma once
#include <memory>
#include <vector>

#include "passes/pass.h"

namespace yoloc {

/// The passes a compile may leave out (PassContext::disabled): rewrites the kernels do not rely
/// on, each only a speed-up.
inline constexpr const char* kOptionalPasses[] = {"algebraic_simplify", "cse", "bn_folding",
                                                  "space_to_depth_conv", "combine_parallel_conv"};

/// The passes of ctx.opt_level, in order (empty at -O0), without ctx.disabled. Raises a UserError
/// naming the optional passes when ctx.disabled holds another name.
std::vector<std::unique_ptr<Pass>> make_pipeline(const PassContext& ctx);

/// Runs the pipeline on g; after each pass records its time and node count in ctx.stats, dumps
/// the IR when ctx.dump_dir is set, and runs the verifier in debug builds or with ctx.verify.
void optimize(Graph& g, PassContext& ctx);

/// Number of kernels the fused graph needs (groups that are not views); the node count when the
/// fusion pass has not run.
size_t kernel_count(const Graph& g);

}  // namespace yoloc
