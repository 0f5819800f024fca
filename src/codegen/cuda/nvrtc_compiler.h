#pragma once
/// Builds CUDA C++ source into a cubin (machine code for one sm_XX) plus its PTX (for a driver
/// to JIT on later chips) with NVRTC, the CUDA toolkit's runtime compiler library. Needs no GPU.
#include <string>
#include <vector>

namespace yoloc::codegen::cuda {

/// How to compile. `arch` is a real architecture: "sm_80", "sm_86", "sm_90", "sm_90a", ...
struct NvrtcOptions {
  std::string arch = "sm_80";
  bool fmad = true;        ///< contract multiply-adds into FMAs
  bool line_info = false;  ///< -lineinfo, for profilers
  /// Adds the include folder of the toolkit yoloc was built with (cuda_fp16.h, cuda_bf16.h)
  /// when it exists on this machine. yoloc's own kernels include nothing.
  bool toolkit_headers = true;
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;        ///< "NAME" or "NAME=VALUE"
  std::vector<std::string> extra_options;  ///< passed to NVRTC as they are
};

/// The result of one compilation.
struct CompiledModule {
  std::string arch;   ///< as NvrtcOptions::arch
  std::string cubin;  ///< ELF image for cuModuleLoadData
  std::string ptx;    ///< PTX text (without NVRTC's trailing NUL)
  std::string log;    ///< NVRTC's warnings, if any
};

/// Compiles `source`; `name` names the program in messages (use the kernel symbol, or the
/// kernels' symbols). Raises a UserError naming `name` and the arch with NVRTC's log attached
/// when the source does not compile, and a UserError listing the architectures this NVRTC knows
/// when `opts.arch` is not one of them. A source that defines YC_ARCH_SPECIFIC as 1 (a kernel
/// with wgmma) is built for sm_90a when `opts.arch` is sm_90.
CompiledModule nvrtc_compile(const std::string& source, const std::string& name,
                             const NvrtcOptions& opts = {});

/// NVRTC's version, e.g. "13.0".
std::string nvrtc_version();

/// The real architectures this NVRTC compiles for, e.g. {75, 80, 86, ..., 120}.
std::vector<int> nvrtc_supported_archs();

/// The number of "sm_90a" (90); raises a UserError for a string not of the form sm_<digits>[a|f].
int parse_cuda_arch(const std::string& arch);

/// The folder of the CUDA headers of the toolkit yoloc was built with.
std::string cuda_toolkit_include_dir();

}  // namespace yoloc::codegen::cuda
