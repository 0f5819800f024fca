#pragma once
/// The OpenCL compiler driver: an optimized graph (target "opencl") in, the pieces of an OpenCL
/// artifact out: one OpenCL C program (kClPrelude, then every task's kernels), the weights blob,
/// the memory plan (one arena: activations, then the graph inputs) and the program: the calls in
/// order, each with its bindings (kernel ABI of cl_kernel.h) and its NDRange in `params`
/// (global x, y, z, then local x, y, z; a local of 0: the implementation picks).
#include <map>
#include <string>
#include <vector>

#include "artifact/program.h"
#include "codegen/cpu/cpu_compiler.h"
#include "codegen/memory_plan.h"
#include "codegen/cpu/schedule.h"

namespace yoloc::codegen::opencl {

/// The blob names an OpenCL artifact's program refers to.
inline constexpr const char* kSourceBlob = "kernels.cl";
inline constexpr const char* kWeightsBlob = "weights";

struct OpenClBuild {
  std::string source;   ///< the OpenCL C program
  std::string weights;  ///< constants, 64-byte aligned each
  artifact::Program program;
  MemoryPlan plan;
  std::vector<cpu::CompiledTask> tasks;
  int tuned = 0;
};

/// Compiles `g` (after optimize() for target "opencl", static shapes); `configs`: tuned configs
/// by workload key (others take their template's default). Raises a UserError for a group no
/// template takes or a graph output that is a constant.
OpenClBuild compile_opencl(const Graph& g, const std::map<std::string, ScheduleConfig>& configs);

}  // namespace yoloc::codegen::opencl
