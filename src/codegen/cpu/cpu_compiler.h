#pragma once
/// The CPU compiler driver: an optimized graph (target "cpu") in, the pieces of a CPU artifact
/// out. Every task (tasks.h) is lowered with its config (a tuned one when given, else the
/// template's heuristic default); the kernels plus one runtime-ABI wrapper each
/// (include/yoloc/kernel_abi.h) become one C++ source built into a shared object; constants are
/// packed into one weights blob; the memory plan places every activation in one arena, graph
/// inputs after it; the program lists the calls in order with their bindings.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/build_cache.h"
#include "codegen/cpu/host_compiler.h"
#include "codegen/cpu/schedule.h"
#include "codegen/cpu/tasks.h"
#include "codegen/memory_plan.h"
#include "artifact/program.h"

namespace yoloc::codegen::cpu {

/// The blob names a CPU artifact's program refers to.
inline constexpr const char* kKernelBlob = "kernels.so";
inline constexpr const char* kWeightsBlob = "weights";

struct CpuCompileOptions {
  CpuIsa isa = detect_host_isa();  ///< what the kernels are generated for
  HostCompilerOptions cc;          ///< how they are built (host_compiler_options_for(cxx, isa))
  /// Configs by workload key (from tuning records); other tasks take their default.
  std::map<std::string, ScheduleConfig> configs;
  /// Where built kernels are looked up and kept (codegen/build_cache.h); null: build always.
  BuildCache* cache = nullptr;
};

/// What one task was compiled with.
struct CompiledTask {
  std::string key;
  std::string template_name;
  std::string group_name;
  ScheduleConfig config;
  bool tuned = false;  ///< the config came from CpuCompileOptions::configs
};

struct CpuBuild {
  std::string source;      ///< the generated C++ (all kernels and wrappers)
  std::string kernels_so;  ///< the built shared object
  std::string weights;     ///< the weights blob (64-byte aligned constants)
  std::string compiler_log;
  artifact::Program program;
  MemoryPlan plan;
  std::vector<CompiledTask> tasks;
  int tuned = 0;  ///< tasks that took a config from the records
  bool from_cache = false;  ///< kernels_so came from CpuCompileOptions::cache
};

/// The generated source of a lowered kernel plus its runtime-ABI wrapper `abi_symbol`, which
/// runs the kernel over `batch` images, advancing argument i by `batch_strides[i]` bytes per
/// image (one entry per non-null argument). Used by the driver and by the tuner's measurements.
std::string abi_wrapper_source(const LoweredKernel& k, const std::string& abi_symbol,
                               int64_t batch, const std::vector<uint64_t>& batch_strides);

/// Compiles `g` (after optimize() for target "cpu", static shapes). Raises a UserError for a
/// graph the CPU target cannot take (a group without a template, a shape that is not static)
/// or when the host compiler fails (its log attached).
CpuBuild compile_cpu(const Graph& g, const CpuCompileOptions& options);

}  // namespace yoloc::codegen::cpu
