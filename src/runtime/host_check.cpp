#include "runtime/host_check.h"

#include <elf.h>

#include <cstring>

#include "core/error.h"

namespace yoloc::runtime {
namespace {

const char* machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "x86";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    default: return "an unknown machine";
  }
}

uint16_t host_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

/// The CPU features the ISA of target "cpu-<isa>" needs that this CPU lacks ("" when none).
std::string missing_features(const std::string& target) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  std::string missing;
  const auto need = [&](bool has, const char* name) {
    if (!has) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  if (target == "cpu-avx512") {
    need(__builtin_cpu_supports("avx512f"), "avx512f");
    need(__builtin_cpu_supports("avx512bw"), "avx512bw");
    need(__builtin_cpu_supports("avx512vl"), "avx512vl");
    need(__builtin_cpu_supports("avx512dq"), "avx512dq");
  }
  if (target == "cpu-avx512" || target == "cpu-avx2") {
    need(__builtin_cpu_supports("avx2"), "avx2");
    need(__builtin_cpu_supports("fma"), "fma");
  }
  return missing;
#else
  (void)target;
  return "";
#endif
}

/// Raises a UserError unless the ELF64 shared object `so` (header `h`, already read) holds
/// every byte its headers point at: a truncated library would fault inside dlopen.
void check_elf_complete(const Elf64_Ehdr& h, std::span<const std::byte> so,
                        const std::string& where) {
  const uint64_t size = so.size();
  const auto fits = [size](uint64_t offset, uint64_t bytes) {
    return offset <= size && bytes <= size - offset;
  };
  const auto refuse = [&](const char* what) {
    user_error(
        "artifact '{}': its kernel library is truncated or malformed ({}, {} bytes); "
        "recompile the model",
        where, what, size);
  };
  if (h.e_type != ET_DYN) refuse("not a shared object");
  if (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phnum == 0 ||
      !fits(h.e_phoff, uint64_t{h.e_phnum} * sizeof(Elf64_Phdr)))
    refuse("program headers outside the file");
  if (h.e_shnum != 0 && (h.e_shentsize != sizeof(Elf64_Shdr) ||
                         !fits(h.e_shoff, uint64_t{h.e_shnum} * sizeof(Elf64_Shdr))))
    refuse("section headers outside the file");
  for (uint16_t i = 0; i < h.e_phnum; ++i) {
    Elf64_Phdr ph{};
    std::memcpy(&ph, so.data() + h.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_filesz > ph.p_memsz && ph.p_type == PT_LOAD) refuse("a segment larger on file");
    if (!fits(ph.p_offset, ph.p_filesz)) refuse("a segment outside the file");
  }
}

}  // namespace

void check_kernels_run_here(const std::string& target, std::span<const std::byte> kernel_so,
                            const std::string& where) {
  Elf64_Ehdr h{};
  if (kernel_so.size() < sizeof h || std::memcmp(kernel_so.data(), ELFMAG, SELFMAG) != 0)
    user_error("artifact '{}': its kernel library is not an ELF shared object; recompile it",
               where);
  std::memcpy(&h, kernel_so.data(), sizeof h);
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_machine != host_machine())
    user_error(
        "artifact '{}' holds kernels for {} (target {}), this machine is {}; compile the model "
        "on or for this machine (yoloc compile --target cpu)",
        where, machine_name(h.e_machine), target, machine_name(host_machine()));
  check_elf_complete(h, kernel_so, where);
  const std::string missing = missing_features(target);
  if (!missing.empty())
    user_error(
        "artifact '{}' was compiled for {}, but this CPU lacks {}; compile it with --isa avx2 "
        "or --isa generic",
        where, target, missing);
}

}  // namespace yoloc::runtime
