#pragma once
/// Whether this machine can run a CPU artifact's kernels: the kernel library's ELF machine must
/// be this process's, and the vector ISA the manifest's target names ("cpu-avx512", ...) must be
/// supported by this CPU. Loading kernels for another CPU would fail in dlopen with an obscure
/// message, or crash with an illegal instruction in the first kernel.
#include <cstddef>
#include <span>
#include <string>

namespace yoloc::runtime {

/// Raises a UserError naming `where`, the artifact's target and this machine when the kernels
/// in `kernel_so` cannot run here, or when the library is truncated or malformed (a header,
/// segment or section table outside its bytes): checked before anything dlopens it.
void check_kernels_run_here(const std::string& target, std::span<const std::byte> kernel_so,
                            const std::string& where);

}  // namespace yoloc::runtime
