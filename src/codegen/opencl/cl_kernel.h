#pragma once
/// What an OpenCL kernel template hands the OpenCL compiler driver: OpenCL C source, the
/// launches it makes (an NDRange each) and the arguments they bind.
///
/// Kernel ABI: every kernel takes, for each of its arguments in order, a global float pointer and
/// its offset in floats,
///   __kernel void sym(__global float* a0, uint o0, __global float* a1, uint o1, ...)
/// so that the runtime binds the arena and the weights buffer once and no argument needs the
/// device's sub-buffer alignment. The body starts by taking `pK = aK + oK`.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace yoloc::codegen::opencl {

/// One argument of a lowered kernel.
struct ClArg {
  const Value* value = nullptr;  ///< an activation (arena or graph input); null for a constant
  std::vector<float> data;       ///< a constant the compiler stores with the weights
  bool output = false;           ///< written by the kernel
};

/// One NDRange launch of a kernel of the source.
struct ClLaunch {
  std::string symbol;
  int64_t global[3] = {1, 1, 1};  ///< work items per dim (a multiple of local where local is set)
  int64_t local[3] = {0, 0, 0};   ///< work-group shape; 0: the implementation picks
  std::vector<int> args;          ///< indices into ClLowered::args, in the kernel's order
};

struct ClLowered {
  std::string source;  ///< OpenCL C 1.2 (kClPrelude not included)
  std::vector<ClArg> args;
  std::vector<ClLaunch> launches;
};

/// Helpers every OpenCL kernel may use (yc_sigmoid, yc_silu, yc_exp, yc_max, yc_relu1), once at
/// the top of a program.
extern const char* const kClPrelude;

/// "__kernel void sym(__global float* a0, uint o0, ...) {\n  __global float* p0 = a0 + o0; ..."
/// for `args` pointers (the caller closes the brace).
std::string kernel_head(const std::string& symbol, size_t args);

/// A float literal OpenCL C reads back exactly ("1.5f", "-INFINITY").
std::string float_literal(float v);

}  // namespace yoloc::codegen::opencl
