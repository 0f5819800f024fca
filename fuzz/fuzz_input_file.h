#pragma once
/// The fuzz input as a file, for readers that take a path: an in-memory file (memfd) rewritten
/// on each input and named by /proc/self/fd/N.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace yoloc::fuzz {

inline std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = [] {
    const int f = ::memfd_create("yoloc-fuzz-input", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace yoloc::fuzz
