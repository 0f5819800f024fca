#pragma once
/// Builds generated C++ into a shared object with the host compiler (or a cross compiler).
#include <string>
#include <vector>

#include "runtime/kernel_library.h"

namespace yoloc::codegen::cpu {

/// How to invoke the compiler. The defaults build for this machine; a cross build sets `cxx`
/// (e.g. "aarch64-linux-gnu-g++") and replaces `-march=native` in `flags`.
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

/// Loads a built shared object (tests and benchmarks): the runtime's loader.
using LoadedLibrary = runtime::KernelLibrary;

}  // namespace yoloc::codegen::cpu
