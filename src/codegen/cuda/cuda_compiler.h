#pragma once
/// The CUDA compiler driver: an optimized graph (target "cuda") in, the pieces of a CUDA artifact
/// out. Every task (tasks.h) is lowered with its config (a tuned one when given, else the
/// template's default) and compiled by NVRTC into a cubin of its own (in parallel); constants go
/// into one weights blob the runtime uploads once; the memory plan places every activation in one
/// device arena, followed by the graph inputs and the scratch the generic kernels share; the
/// program lists the launches in order with their geometry and pointer bindings. A detector also
/// gets the GPU pre- and post-processing kernels (detect_kernels.h) in a module of its own.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/cpu_compiler.h"
#include "codegen/cuda/detect_kernels.h"
#include "codegen/cuda/tasks.h"
#include "codegen/memory_plan.h"
#include "artifact/cuda_program.h"

namespace yoloc::codegen::cuda {

/// Blob names of a CUDA artifact.
inline constexpr const char* kCudaWeightsBlob = "weights";
/// Module i is the blob "cuda_module_<i>".
std::string cuda_module_blob(size_t i);

struct CudaCompileOptions {
  std::string arch = "sm_90";
  /// Configs by workload key (from tuning records); other tasks take their default.
  std::map<std::string, ScheduleConfig> configs;
  /// The detection kernels to add (a detector's family, input and head), or none.
  std::optional<DetectKernelConfig> detect;
  int jobs = 0;  ///< parallel NVRTC compilations; 0: the machine's hardware threads
  /// Where built cubins are looked up and kept (codegen/build_cache.h); null: build always.
  BuildCache* cache = nullptr;
  /// The back-to-back conv pairs run as one kernel each (extract_cuda_tasks): none unless
  /// asked; yoloc compile asks for those the tuning records measured faster (B2bPolicy).
  B2bPolicy b2b;
  /// The network's first two convs in one kernel where the stem-pair template takes them
  /// (extract_cuda_tasks). Off unless asked (--stem-pair): on an H200, yolov8n fp16 at batch 1
  /// ran 0.258 ms with the pair against 0.255 ms without, at batch 128 9.39 ms against 9.10 ms
  /// (stem_pair_template.h says why).
  bool stem_pairs = false;
  /// How the memory plan reuses dead bytes (plan_memory, --memory-reuse): kOrdered, so that the
  /// runtime's streams run independent branches without waiting for each other's bytes (on an
  /// H200 at batch 1, fp16: yolov8n 0.263 -> 0.255 ms, yolox-nano 0.225 -> 0.204 ms), at about
  /// 1.7x the sequential plan's arena (yolov8n at batch 128: 1377 MB against 826 MB).
  Reuse reuse = Reuse::kOrdered;
  /// The program runs `lanes` copies of the graph's kernels at once, each on its own slice of
  /// lanes x the graph's batch (batch_lanes.h): the artifact's batch is that product, and its
  /// inputs and outputs are dense tensors of it. 1: the graph's batch, one copy.
  int lanes = 1;
};

struct CudaBuild {
  std::string source;                ///< every task's source, for --emit-source
  std::vector<std::string> modules;  ///< cubins, one per task (then the detection module)
  std::string weights;
  artifact::cuda::CudaProgram program;
  MemoryPlan plan;
  uint64_t scratch_bytes = 0;
  std::vector<cpu::CompiledTask> tasks;
  int tuned = 0;
  double nvrtc_seconds = 0;  ///< wall time of the NVRTC compilations
  int cached_modules = 0;    ///< modules taken from CudaCompileOptions::cache
};

/// Elements from the first to the last one a strided operand addresses, plus one (0 for an empty
/// value): with the argument's element offset, what its device buffer must hold.
uint64_t addressed_elements(const CudaOperand& op);

/// Compiles `g` (after optimize() for target "cuda", static shapes; with options.lanes > 1, one
/// lane's graph). Raises a UserError for a
/// group no template takes, a shape that is not static, or an NVRTC failure (log attached).
CudaBuild compile_cuda(const Graph& g, const CudaCompileOptions& options);

}  // namespace yoloc::codegen::cuda
