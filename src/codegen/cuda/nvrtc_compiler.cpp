#include "codegen/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "core/error.h"

#ifndef YOLOC_CUDA_INCLUDE_DIR
#define YOLOC_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace yoloc::codegen::cuda {
namespace {

// A failed NVRTC call other than the compilation itself: out of memory, a broken install.
void check(nvrtcResult r, const char* call, const std::string& name) {
  if (r != NVRTC_SUCCESS) {
    user_error("NVRTC: {} failed for kernel '{}': {}", call, name, nvrtcGetErrorString(r));
  }
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string program_log(nvrtcProgram p) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n <= 1) return "";
  std::string log(n, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(n - 1);
  return log;
}

std::string supported_list() {
  std::string s;
  for (int a : nvrtc_supported_archs()) s += (s.empty() ? "sm_" : ", sm_") + std::to_string(a);
  return s;
}

}  // namespace

int parse_cuda_arch(const std::string& arch) {
  std::string digits = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 ? arch.substr(3) : "";
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();
  const bool ok = !digits.empty() && digits.size() <= 4 &&
                  std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); });
  if (!ok) {
    user_error("CUDA architecture '{}' is not of the form sm_<number> (e.g. sm_80, sm_90, sm_90a)",
               arch);
  }
  return std::stoi(digits);
}

std::string cuda_toolkit_include_dir() { return YOLOC_CUDA_INCLUDE_DIR; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion", "-");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtc_supported_archs() {
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs", "-");
  std::vector<int> archs(static_cast<size_t>(n));
  if (n > 0) check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs", "-");
  return archs;
}

CompiledModule nvrtc_compile(const std::string& source, const std::string& name,
                             const NvrtcOptions& opts) {
  const int arch = parse_cuda_arch(opts.arch);
  const std::vector<int> known = nvrtc_supported_archs();
  if (std::find(known.begin(), known.end(), arch) == known.end()) {
    user_error(
        "CUDA architecture '{}' (for kernel '{}') is not supported by NVRTC {}; it "
        "supports {}",
        opts.arch, name, nvrtc_version(), supported_list());
  }
  // Kernels that use arch-specific instructions (wgmma: sm_90a) say so in their source; their
  // cubin runs on the sm_90 GPUs only, as every cubin of an artifact for sm_90 does.
  const std::string target =
      opts.arch == "sm_90" && source.find("#define YC_ARCH_SPECIFIC 1") != std::string::npos
          ? "sm_90a"
          : opts.arch;
  std::vector<std::string> args = {"--gpu-architecture=" + target, "--std=c++17",
                                   "--device-as-default-execution-space",
                                   opts.fmad ? "--fmad=true" : "--fmad=false"};
  if (opts.line_info) args.push_back("--generate-line-info");
  if (opts.toolkit_headers && std::filesystem::is_directory(cuda_toolkit_include_dir())) {
    args.push_back("--include-path=" + cuda_toolkit_include_dir());
  }
  for (const std::string& d : opts.include_dirs) args.push_back("--include-path=" + d);
  for (const std::string& d : opts.defines) args.push_back("--define-macro=" + d);
  args.insert(args.end(), opts.extra_options.begin(), opts.extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  nvrtcProgram raw = nullptr;
  const std::string file = name + ".cu";
  check(nvrtcCreateProgram(&raw, source.c_str(), file.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram", name);
  Program prog(raw);
  const nvrtcResult r = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
  CompiledModule out;
  out.arch = opts.arch;
  out.log = program_log(raw);
  if (r != NVRTC_SUCCESS) {
    std::string opt_text;
    for (const std::string& a : args) opt_text += " " + a;
    user_error("NVRTC could not compile kernel '{}' for {}: {}\noptions:{}\n--- NVRTC log ---\n{}",
               name, opts.arch, nvrtcGetErrorString(r), opt_text,
               out.log.empty() ? "(empty)" : out.log);
  }
  size_t n = 0;
  check(nvrtcGetCUBINSize(raw, &n), "nvrtcGetCUBINSize", name);
  out.cubin.assign(n, '\0');
  if (n > 0) check(nvrtcGetCUBIN(raw, out.cubin.data()), "nvrtcGetCUBIN", name);
  check(nvrtcGetPTXSize(raw, &n), "nvrtcGetPTXSize", name);
  out.ptx.assign(n, '\0');
  if (n > 0) check(nvrtcGetPTX(raw, out.ptx.data()), "nvrtcGetPTX", name);
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (out.cubin.empty()) {
    user_error(
        "NVRTC made no cubin for kernel '{}' with arch {}: give a real architecture "
        "(sm_XX), not a virtual one",
        name, opts.arch);
  }
  return out;
}

}  // namespace yoloc::codegen::cuda
