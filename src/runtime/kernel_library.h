#pragma once
/// A shared object loaded from bytes (a kernel blob of an artifact, or a freshly built one).
#include <span>
#include <string>

#include "yoloc/kernel_abi.h"

namespace yoloc::runtime {

/// A dlopen'ed shared object, closed on destruction. The bytes go into an anonymous memory file
/// (memfd_create, loaded through /proc/self/fd/N) or, where that is unavailable, into a private
/// temporary file that is unlinked once loaded; nothing is left on disk.
class KernelLibrary {
 public:
  /// Loads `bytes` (RTLD_NOW | RTLD_LOCAL); raises a UserError with dlerror() on failure.
  explicit KernelLibrary(std::span<const std::byte> bytes);
  explicit KernelLibrary(const std::string& bytes)
      : KernelLibrary(std::as_bytes(std::span(bytes.data(), bytes.size()))) {}
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  /// The address of `name`; raises a UserError when the library lacks it. For libraries this
  /// process built itself (tests, the tuner): an artifact's kernels are found through table().
  void* symbol(const std::string& name) const;
  /// The kernel table the library exports (kernel_abi.h); raises a UserError when it has none.
  const yoloc_kernel_table& table() const;

 private:
  void* handle_ = nullptr;
  // The memory file stays open while the library is loaded: glibc recognises a loaded object
  // by its path, so a reused /proc/self/fd/N would hand back the previous library.
  int fd_ = -1;
};

}  // namespace yoloc::runtime
