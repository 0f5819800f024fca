#pragma once
/// Builds generated C++ into a shared object with the host compiler (or a cross compiler), and
/// loads one for tests and benchmarks.
#include <string>
#include <vector>

namespace yoloc::codegen::cpu {

/// How to invoke the compiler. The defaults build for this machine; a cross build sets `cxx`
/// (e.g. "aarch64-linux-gnu-g++") and replaces `-march=native` in `flags`.
struct HostCompilerOptions {
  std::string cxx = "c++";
  std::vector<std::string> flags = {"-O3", "-march=native", "-std=c++17", "-fPIC", "-shared"};
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

/// A dlopen'ed shared object, closed on destruction.
class LoadedLibrary {
 public:
  /// Writes `bytes` to a temporary file and loads it (RTLD_NOW | RTLD_LOCAL); raises a
  /// UserError with dlerror() on failure.
  explicit LoadedLibrary(const std::string& bytes);
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;

  /// The address of `name`; raises a UserError when the library lacks it.
  void* symbol(const std::string& name) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace yoloc::codegen::cpu
