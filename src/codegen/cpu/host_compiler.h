#pragma once
/// Builds generated C++ into a shared object with the host compiler (or a cross compiler).
#include <string>
#include <vector>

#include "codegen/cpu/isa.h"

namespace yoloc::codegen::cpu {

/// How to invoke the compiler. The defaults build for this machine; host_compiler_options_for
/// makes them for another compiler (a cross compiler such as "aarch64-linux-gnu-g++") or ISA.
struct HostCompilerOptions {
  std::string cxx = "c++";
  // -fno-trapping-math and -fno-math-errno change no result, but let loops with conversions,
  // selects and sqrt vectorise (FP exception flags and errno are never read).
  std::vector<std::string> flags = {"-O3", "-march=native", "-fno-trapping-math", "-fno-math-errno",
                                    "-std=c++17", "-fPIC", "-shared"};
  bool keep_dir = false;  ///< keep the temporary build folder (for inspection)
};

/// A built shared object: its bytes, and the path where it was written (removed with the
/// temporary folder unless keep_dir was set).
struct SharedObject {
  std::string bytes;
  std::string path;
  std::string log;  ///< compiler output (warnings)
};

/// Writes `source` to a temporary folder and compiles it into a shared object. Raises a UserError
/// with the compiler's log when the compiler cannot be run or fails.
SharedObject compile_shared_object(const std::string& source,
                                   const HostCompilerOptions& opts = {});

/// Compiles `source` (which defines main) into a statically linked executable with opts.cxx and
/// opts.flags less "-shared" and "-fPIC": a test harness a user-mode emulator (qemu-aarch64) runs
/// without the target's shared libraries. Raises a UserError like compile_shared_object.
SharedObject compile_static_executable(const std::string& source,
                                       const HostCompilerOptions& opts = {});

/// What a build with `opts` depends on besides its source, for the kernel build cache: the
/// compiler's version and target triple, the flags, and with -march=native the target options it
/// resolves to on this machine (`-Q --help=target`), so that another CPU is another build. Runs
/// the compiler once per compiler and flags in a process.
std::string compiler_identity(const HostCompilerOptions& opts);

/// The architecture the C++ compiler `cxx` generates code for, from `cxx -dumpmachine`
/// ("x86_64", "aarch64", ... the triple's first field), or "" when it cannot be run. Cached.
std::string compiler_arch(const std::string& cxx);

/// The ISA to generate for when `cxx` is the compiler: the host's ISA (detect_host_isa) when it
/// targets this machine's architecture, NEON for an aarch64 compiler (aarch64-linux-gnu-g++),
/// generic for any other.
CpuIsa default_isa_for_compiler(const std::string& cxx);

/// The options that build kernels emitted for `isa` with the compiler `cxx`: -O3, -march=native
/// when isa is the host's and cxx targets this machine (tuned for it), else the ISA's portable
/// -march (x86-64-v4, x86-64-v3, armv8-a; none for generic), and -ffp-contract=fast so the
/// vector-extension kernels' a * b + c become FMAs. Raises a UserError when cxx targets another
/// architecture than the ISA's (e.g. avx2 with aarch64-linux-gnu-g++).
HostCompilerOptions host_compiler_options_for(const std::string& cxx, CpuIsa isa);

}  // namespace yoloc::codegen::cpu
