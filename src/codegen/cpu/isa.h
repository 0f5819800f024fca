#pragma once
/// The instruction sets CPU code generation targets. The kernels keep one layout for all of them
/// (NCHW16c: 16 floats per channel block); what changes with the ISA is the code a template
/// emits (AVX-512 intrinsics, or GCC vector extensions the compiler splits into AVX2 / NEON /
/// SSE registers), the register budget its tiles must fit, and the compiler flags.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace yoloc::codegen::cpu {

/// The channel block of NCHW16c: floats per AVX-512 register, and the vector every ISA's kernels
/// compute with (split into several registers where those are narrower).
constexpr int64_t kBlock = 16;

/// A CPU instruction set.
enum class CpuIsa {
  kAvx512,   ///< x86-64 with AVX-512 (x86-64-v4): intrinsics, 32 zmm registers
  kAvx2,     ///< x86-64 with AVX2 + FMA (x86-64-v3): vector extensions, 16 ymm registers
  kNeon,     ///< aarch64 (Armv8-A, Advanced SIMD): vector extensions, 32 q registers
  kGeneric,  ///< whatever the compiler targets by default: vector extensions, 4-float vectors
};

/// What code generation needs to know of an ISA.
struct CpuIsaInfo {
  CpuIsa isa;
  const char* name;      ///< "avx512", "avx2", "neon", "generic"
  const char* arch;      ///< the machine it runs on: "x86_64", "aarch64", or "" (any)
  int vector_floats;     ///< floats per hardware vector register
  int vector_registers;  ///< hardware vector registers
  const char* march;     ///< the -march flag of a build for any such machine, or "" (none)
};

/// The description of isa.
const CpuIsaInfo& isa_info(CpuIsa isa);
/// isa_info(isa).name.
const char* isa_name(CpuIsa isa);
/// The ISA called `name` (as isa_name writes it), or nullopt.
std::optional<CpuIsa> parse_isa(const std::string& name);
/// The names of every ISA, for messages and command-line help ("avx512, avx2, neon, generic").
std::string isa_names();

/// Hardware registers one kBlock-float vector occupies: 1 zmm, 2 ymm, 4 q (NEON / generic).
int registers_per_block(CpuIsa isa);

/// The best ISA this process's machine runs: AVX-512 (avx512f), else AVX2 (avx2 + fma), else
/// generic on x86-64 (cpuid through __builtin_cpu_supports, which also checks that the OS saves
/// the registers); NEON on aarch64; generic elsewhere. Computed once.
CpuIsa detect_host_isa();

/// True when this machine runs code built for isa: generic always, avx2 on an AVX2 or AVX-512
/// host, the others on a host of their own ISA.
bool host_can_run(CpuIsa isa);

/// The machine of this process: "x86_64", "aarch64" or "other".
const char* host_arch();

}  // namespace yoloc::codegen::cpu
