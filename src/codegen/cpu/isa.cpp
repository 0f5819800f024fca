#include "codegen/cpu/isa.h"

#include "core/error.h"

namespace yoloc::codegen::cpu {
namespace {

// Generic is the least any target has: SSE2's 16 xmm registers of 4 floats.
constexpr CpuIsaInfo kIsas[] = {
    {CpuIsa::kAvx512, "avx512", "x86_64", 16, 32, "-march=x86-64-v4"},
    {CpuIsa::kAvx2, "avx2", "x86_64", 8, 16, "-march=x86-64-v3"},
    {CpuIsa::kNeon, "neon", "aarch64", 4, 32, "-march=armv8-a"},
    {CpuIsa::kGeneric, "generic", "", 4, 16, ""},
};

CpuIsa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return CpuIsa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
  return CpuIsa::kGeneric;
#elif defined(__aarch64__)
  return CpuIsa::kNeon;
#else
  return CpuIsa::kGeneric;
#endif
}

}  // namespace

const CpuIsaInfo& isa_info(CpuIsa isa) {
  for (const CpuIsaInfo& i : kIsas) {
    if (i.isa == isa) return i;
  }
  internal_error("unknown CpuIsa {}", static_cast<int>(isa));
}

const char* isa_name(CpuIsa isa) { return isa_info(isa).name; }

std::optional<CpuIsa> parse_isa(const std::string& name) {
  for (const CpuIsaInfo& i : kIsas) {
    if (name == i.name) return i.isa;
  }
  return std::nullopt;
}

std::string isa_names() {
  std::string s;
  for (const CpuIsaInfo& i : kIsas) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

int registers_per_block(CpuIsa isa) {
  return static_cast<int>(kBlock) / isa_info(isa).vector_floats;
}

CpuIsa detect_host_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

bool host_can_run(CpuIsa isa) {
  const CpuIsa host = detect_host_isa();
  return isa == CpuIsa::kGeneric || isa == host ||
         (isa == CpuIsa::kAvx2 && host == CpuIsa::kAvx512);
}

const char* host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "other";
#endif
}

}  // namespace yoloc::codegen::cpu
