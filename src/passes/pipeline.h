#pragma once
#include <memory>
#include <vector>

#include "passes/pass.h"

namespace yoloc {

/// The passes of ctx.opt_level, in order (empty at -O0).
std::vector<std::unique_ptr<Pass>> make_pipeline(const PassContext& ctx);

/// Runs the pipeline on g; after each pass records its time and node count in ctx.stats, dumps
/// the IR when ctx.dump_dir is set, and runs the verifier in debug builds or with ctx.verify.
void optimize(Graph& g, PassContext& ctx);

/// Number of kernels the fused graph needs (groups that are not views); the node count when the
/// fusion pass has not run.
size_t kernel_count(const Graph& g);

}  // namespace yoloc
