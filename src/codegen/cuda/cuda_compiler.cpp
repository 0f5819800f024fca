#include "codegen/cuda/cuda_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "codegen/arena_map.h"
#include "codegen/cuda/batch_lanes.h"
#include "codegen/cuda/nvrtc_compiler.h"

namespace yoloc::codegen::cuda {
namespace {

/// Device constants are aligned for the widest vector loads.
constexpr uint64_t kWeightAlignment = 256;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// The weights blob of a build: each constant once. Kernels only read their constants, so
/// launches whose constants are equal byte for byte share one copy (the box pairs of a detect
/// head each take the tail's anchor table).
class WeightsBlob {
 public:
  explicit WeightsBlob(std::string& blob) : blob_(blob) {}
  /// The offset of `data` in the blob, appended (aligned) unless an equal constant is there.
  uint64_t add(const std::string& data) {
    const size_t h = std::hash<std::string>{}(data);
    const auto [from, to] = by_hash_.equal_range(h);
    for (auto it = from; it != to; ++it) {
      if (blob_.compare(it->second, data.size(), data) == 0) return it->second;
    }
    blob_.resize(align_up(blob_.size(), kWeightAlignment), '\0');
    const uint64_t offset = blob_.size();
    blob_ += data;
    by_hash_.emplace(h, offset);
    return offset;
  }

 private:
  std::string& blob_;
  std::unordered_multimap<size_t, uint64_t> by_hash_;
};

/// Compiles every source in parallel, or takes its cubin from `cache` (when not null; *cached
/// counts those); raises the first failure (NVRTC's log attached).
std::vector<std::string> compile_all(const std::vector<std::pair<std::string, std::string>>& srcs,
                                     const std::string& arch, int jobs, BuildCache* cache,
                                     int* cached) {
  std::vector<std::string> cubins(srcs.size());
  std::atomic<int> hits{0};
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  const auto work = [&] {
    for (size_t i = next++; i < srcs.size(); i = next++) {
      try {
        NvrtcOptions o;
        o.arch = arch;
        o.toolkit_headers = false;  // the source is all the build reads: a complete cache key
        const auto build = [&] { return nvrtc_compile(srcs[i].second, srcs[i].first, o).cubin; };
        if (!cache) {
          cubins[i] = build();
          continue;
        }
        bool hit = false;
        cubins[i] = cache->get_or_build(
            build_key({"yoloc " YOLOC_VERSION " nvrtc cubin", nvrtc_version(), arch,
                       o.fmad ? "fmad" : "no-fmad", srcs[i].first, srcs[i].second}),
            build, &hit);
        hits += hit ? 1 : 0;
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        next = srcs.size();
      }
    }
  };
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(srcs.size())));
  std::vector<std::thread> pool;
  for (int i = 1; i < n; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  if (cache) cache->trim();
  *cached = hits;
  return cubins;
}

}  // namespace

uint64_t addressed_elements(const CudaOperand& op) {
  const Shape s = op.value->type.static_shape();
  uint64_t last = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 0) return 0;
    last += static_cast<uint64_t>((s[d] - 1) * op.strides[d]);
  }
  return last + 1;
}

std::string cuda_module_blob(size_t i) { return fmt::format("cuda_module_{}", i); }

CudaBuild compile_cuda(const Graph& g, const CudaCompileOptions& options) {
  const int sm = parse_cuda_arch(options.arch);
  CudaBuild out;
  const std::vector<CudaTask> tasks = extract_cuda_tasks(g, sm, options.b2b, options.stem_pairs);
  // A b2b pair's kernel reads the first group's inputs while it writes the second's outputs,
  // and its intermediate is never stored; a conv writes the outputs of the Resizes it absorbs.
  // The runtime runs independent branches on concurrent streams, ordered by the bytes each
  // launch touches: a reuse of bytes should not order two branches (Reuse::kOrdered).
  out.plan = plan_memory(g, merged_groups(tasks), options.reuse, redirects(tasks));
  verify_memory_plan(out.plan);
  const ArenaMap arena(g, out.plan);
  const LaneLayout layout(g, out.plan, arena, options.lanes);
  const int lanes = layout.lanes();
  Availability avail(g);
  const uint64_t scratch_offset = align_to_arena(layout.bytes());

  artifact::cuda::CudaProgram& prog = out.program;
  prog.arch = options.arch;
  prog.pdl = sm >= 90;  // every kernel begins with YC_KERNEL_ENTRY (cuda_emit.h)
  prog.lanes = lanes;
  prog.input_offsets = layout.input_offsets();
  for (const Value* v : g.outputs) {
    if (v->is_constant())
      user_error("the graph output '{}' is a constant; the CUDA target needs computed outputs",
                 v->name);
    YOLOC_CHECK(arena.place(v).contiguous, "graph output '{}' is not dense in the arena", v->name);
    prog.output_offsets.push_back(layout.offset(v, 0));
  }

  WeightsBlob weights(out.weights);
  std::vector<std::pair<std::string, std::string>> sources;  // (name, source) per module
  out.source = "// Generated by yoloc for " + options.arch + ": one module per task.\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CudaTask& t = tasks[i];
    cpu::CompiledTask ct{t.key, t.template_name, t.group_name, t.default_config, false};
    if (auto cfg = stored_config(t, options.configs)) {
      ct.config = *cfg;
      ct.tuned = true;
      ++out.tuned;
    }
    const std::string prefix = fmt::format("yc_t{}", i);
    const CudaLowered l = t.lower(ct.config, prefix);
    out.scratch_bytes = std::max(out.scratch_bytes, align_to_arena(l.scratch_bytes));
    // The values of the groups the task absorbs hold their data once it runs (a Resize read as
    // a conv's upsampled input is never stored, but the concat holding it counts as complete).
    for (const int grp : t.absorbed)
      for (const Node* n : g.nodes())
        if (n->group == grp)
          for (const Value* v : n->outputs) avail.written(v);
    // Each lane's bindings: its activations (LaneLayout) and its own part of the scratch.
    std::vector<std::vector<artifact::Binding>> args(static_cast<size_t>(lanes));
    std::vector<int> writes;  // the task's outputs and its scratch
    const uint64_t scratch_bytes = std::max<uint64_t>(l.scratch_bytes, 1);
    for (const CudaArg& a : l.args) {
      if (a.kind == CudaArg::Kind::kScratch || (a.kind == CudaArg::Kind::kActivation && a.output))
        writes.push_back(static_cast<int>(args[0].size()));
      if (a.kind == CudaArg::Kind::kActivation) {
        if (a.output) {
          avail.written(a.value);
        } else {
          YOLOC_CHECK(avail.available(a.value), "task {} ({}) reads '{}' before it is written", i,
                      t.group_name, a.value->name);
        }
      }
      // Lane 0's binding; the other lanes' differ only in where an activation or the scratch
      // lies.
      artifact::Binding bind{artifact::cuda::kNullBuffer, 0, 0};
      uint64_t before = 0;  // an activation's bytes addressed before its first element
      switch (a.kind) {
        case CudaArg::Kind::kNull: break;
        case CudaArg::Kind::kScratch: bind = {artifact::kArena, 0, scratch_bytes}; break;
        case CudaArg::Kind::kConstant:
          bind = {kCudaWeightsBlob, weights.add(a.data), a.data.size()};
          break;
        case CudaArg::Kind::kActivation: {
          const uint64_t esize = dtype_size(a.value->type.dtype);
          before = static_cast<uint64_t>(a.element_offset) * esize;
          bind = {artifact::kArena, 0,
                  before + addressed_elements(cuda_operand_of(g, a.value)) * esize};
          break;
        }
      }
      for (int k = 0; k < lanes; ++k) {
        if (a.kind == CudaArg::Kind::kScratch)
          bind.offset = scratch_offset + static_cast<uint64_t>(k) * align_to_arena(scratch_bytes);
        if (a.kind == CudaArg::Kind::kActivation) {
          const uint64_t offset = layout.offset(a.value, k);
          YOLOC_CHECK(offset >= before, "task {}: '{}' lies before its buffer", i, a.value->name);
          bind.offset = offset - before;
        }
        args[static_cast<size_t>(k)].push_back(bind);
      }
    }
    for (const CudaKernel& kernel : l.launches) {
      for (int k = 0; k < lanes; ++k) {
        artifact::cuda::CudaLaunch launch;
        launch.module = static_cast<int>(i);
        launch.symbol = kernel.symbol;
        launch.grid = kernel.grid;
        launch.block = kernel.block;
        launch.shared_bytes = kernel.shared_bytes;
        launch.persistent = kernel.persistent;
        launch.args = args[static_cast<size_t>(k)];
        launch.writes = writes;
        launch.task = {{"group", t.group_name},
                       {"template", t.template_name},
                       {"key", t.key},
                       {"config", ct.config.str()},
                       {"tuned", ct.tuned},
                       {"flops", t.flops},
                       {"task", i}};
        if (lanes > 1) launch.task["lane"] = k;
        prog.launches.push_back(std::move(launch));
      }
    }
    out.source += fmt::format("\n// ---- task {}: {} | {} | {}\n", i, t.group_name, t.key,
                              ct.config.str());
    out.source += l.source;
    sources.emplace_back(prefix, l.source);
    out.tasks.push_back(std::move(ct));
  }
  prog.arena_bytes = scratch_offset + static_cast<uint64_t>(lanes) *
                                          std::max<uint64_t>(out.scratch_bytes, kArenaAlignment);

  if (options.detect) {
    DetectKernelConfig dc = *options.detect;
    dc.prefix = "yc_detect";
    const DetectKernels dk = emit_detect_kernels(dc);
    prog.detect = dk.spec;
    prog.detect_module = static_cast<int>(sources.size());
    out.source += "\n// ---- detection pre- and post-processing\n" + dk.source;
    sources.emplace_back(dc.prefix, dk.source);
  }
  if (out.weights.empty()) out.weights.assign(kArenaAlignment, '\0');  // blobs are never empty

  const auto t0 = std::chrono::steady_clock::now();
  const int jobs = options.jobs > 0 ? options.jobs
                                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  out.modules = compile_all(sources, options.arch, jobs, options.cache, &out.cached_modules);
  out.nvrtc_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < out.modules.size(); ++i) prog.modules.push_back(cuda_module_blob(i));
  return out;
}

}  // namespace yoloc::codegen::cuda
