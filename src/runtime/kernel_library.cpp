#include "runtime/kernel_library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace yoloc::runtime {
namespace fs = std::filesystem;
namespace {

bool write_all(int fd, std::span<const std::byte> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void load_failed(const char* err) {
  user_error(
      "cannot load the model's kernel library: {}; the artifact may be built for another "
      "machine (recompile it with `yoloc compile` for this one)",
      err ? err : "unknown error");
}

}  // namespace

KernelLibrary::KernelLibrary(std::span<const std::byte> bytes) {
  fd_ = static_cast<int>(::memfd_create("yoloc-kernels", MFD_CLOEXEC));
  if (fd_ >= 0) {
    if (!write_all(fd_, bytes))
      user_error("cannot write the kernel library into memory: {}", std::strerror(errno));
    // dlopen hands back an already loaded object of the same name: a library of an earlier
    // artifact whose memfd had this number and that something still pins (its thread-local
    // destructors, say). Pick a descriptor number whose path no loaded object has.
    std::vector<int> spare;
    std::string path = "/proc/self/fd/" + std::to_string(fd_);
    while (void* old = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      ::dlclose(old);  // drops the reference NOLOAD took
      spare.push_back(fd_);
      fd_ = ::dup(fd_);
      if (fd_ < 0) user_error("cannot duplicate the kernel library's descriptor");
      path = "/proc/self/fd/" + std::to_string(fd_);
    }
    for (int f : spare) ::close(f);
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  } else {
    std::string tmpl = (fs::temp_directory_path() / "yoloc-kernels-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) user_error("cannot create a temporary file under {}", tmpl);
    const bool ok = write_all(fd, bytes);
    ::close(fd);
    if (ok) handle_ = ::dlopen(tmpl.c_str(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(tmpl.c_str());  // the mapping stays valid after the file is unlinked
    if (!ok) user_error("cannot write the kernel library to {}", tmpl);
  }
  if (!handle_) {
    const char* err = ::dlerror();
    if (fd_ >= 0) ::close(fd_);
    load_failed(err);
  }
}

KernelLibrary::~KernelLibrary() {
  if (handle_) ::dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

void* KernelLibrary::symbol(const std::string& name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name.c_str());
  if (!p)
    user_error(
        "the model's kernel library lacks the symbol '{}'; the artifact is corrupt: "
        "recompile the model",
        name);
  return p;
}

const yoloc_kernel_table& KernelLibrary::table() const {
  ::dlerror();
  const void* p = ::dlsym(handle_, YOLOC_KERNEL_TABLE_SYMBOL);
  if (!p)
    user_error(
        "the model's kernel library exports no kernel table ({}); it was built by an older "
        "yoloc or is not yoloc's: recompile the model",
        YOLOC_KERNEL_TABLE_SYMBOL);
  return *static_cast<const yoloc_kernel_table*>(p);
}

}  // namespace yoloc::runtime
