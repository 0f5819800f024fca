#include "codegen/cpu/host_compiler.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace yoloc::codegen::cpu {
namespace fs = std::filesystem;
namespace {

fs::path make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "yoloc-cpu-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary folder under {}", fs::temp_directory_path().string());
  return tmpl;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary);
  f << data;
  if (!f) user_error("cannot write {}", p.string());
}

// Single quotes make the shell take every argument literally.
std::string shell_quote(const std::string& s) {
  std::string q(1, '\'');
  for (char c : s) {
    if (c == '\'') {
      q.append("'\\''");
    } else {
      q.push_back(c);
    }
  }
  q.push_back('\'');
  return q;
}

// Runs `cxx flags... kernels.cpp -o <out_name>` in a temporary folder; `what` names the product
// in the error message.
SharedObject build(const std::string& source, const std::string& cxx,
                   const std::vector<std::string>& flags, bool keep_dir, const char* out_name,
                   const char* what) {
  const fs::path dir = make_temp_dir();
  const fs::path src = dir / "kernels.cpp", so = dir / out_name, log = dir / "compile.log";
  write_file(src, source);
  std::vector<std::string> args = {cxx};
  args.insert(args.end(), flags.begin(), flags.end());
  for (const std::string& a : {src.string(), std::string("-o"), so.string()}) args.push_back(a);
  std::string cmd;
  for (const std::string& a : args) cmd.append(shell_quote(a)).append(" ");
  cmd.append("> ").append(shell_quote(log.string())).append(" 2>&1");
  const int status = std::system(cmd.c_str());
  SharedObject out;
  out.log = read_file(log);
  const bool ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && fs::exists(so);
  if (ok) {
    out.bytes = read_file(so);
    out.path = so.string();
  }
  if (!keep_dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    out.path.clear();
  }
  if (!ok) {
    user_error("the host compiler '{}' failed to build the generated {} (exit status {}); "
               "check that it is installed and targets this machine (set --cc).\ncompiler log:\n{}",
               cxx, what, status, out.log);
  }
  return out;
}

/// The standard output of the shell command `cmd`, "" when it cannot be run or fails.
std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    if (pclose(p) != 0) out.clear();
  }
  return out;
}

}  // namespace

SharedObject compile_shared_object(const std::string& source, const HostCompilerOptions& opts) {
  return build(source, opts.cxx, opts.flags, opts.keep_dir, "kernels.so", "kernels");
}

SharedObject compile_static_executable(const std::string& source, const HostCompilerOptions& opts) {
  std::vector<std::string> flags;
  for (const std::string& f : opts.flags) {
    if (f != "-shared" && f != "-fPIC") flags.push_back(f);
  }
  flags.push_back("-static");
  return build(source, opts.cxx, flags, opts.keep_dir, "harness", "executable");
}

std::string compiler_identity(const HostCompilerOptions& opts) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, std::string> cache;
  std::vector<std::string> what = opts.flags;
  what.insert(what.begin(), opts.cxx);
  const std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(what); it != cache.end()) return it->second;
  const std::string cxx = shell_quote(opts.cxx);
  std::string id = command_output(cxx + " --version 2>/dev/null") +
                   command_output(cxx + " -dumpmachine 2>/dev/null");
  for (const std::string& f : opts.flags) id += f + "\n";
  // -march=native means this machine's CPU: the options the compiler resolves it to.
  if (std::find(opts.flags.begin(), opts.flags.end(), "-march=native") != opts.flags.end())
    id += command_output(cxx + " -march=native -Q --help=target 2>/dev/null");
  return cache[what] = id;
}

std::string compiler_arch(const std::string& cxx) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  const std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(cxx); it != cache.end()) return it->second;
  const std::string triple = command_output(shell_quote(cxx) + " -dumpmachine 2>/dev/null");
  std::string arch = triple.substr(0, triple.find_first_of("-\n"));
  if (arch == "amd64") arch = "x86_64";
  if (arch == "arm64") arch = "aarch64";
  return cache[cxx] = arch;
}

CpuIsa default_isa_for_compiler(const std::string& cxx) {
  const std::string arch = compiler_arch(cxx);
  if (arch.empty() || arch == host_arch()) return detect_host_isa();
  return arch == "aarch64" ? CpuIsa::kNeon : CpuIsa::kGeneric;
}

HostCompilerOptions host_compiler_options_for(const std::string& cxx, CpuIsa isa) {
  const CpuIsaInfo& info = isa_info(isa);
  const std::string arch = compiler_arch(cxx);
  // An unknown arch (the compiler does not run) is left to the build to report.
  if (*info.arch && !arch.empty() && arch != info.arch) {
    user_error("the ISA '{}' needs a compiler for {}, but '{}' targets {}; pick a compiler with "
               "--cc or another ISA ({})", info.name, info.arch, cxx, arch, isa_names());
  }
  HostCompilerOptions o;
  o.cxx = cxx;
  const bool native = isa == detect_host_isa() && (arch.empty() || arch == host_arch());
  o.flags = {"-O3"};
  if (native) {
    o.flags.push_back("-march=native");
  } else if (*info.march) {
    o.flags.push_back(info.march);
  }
  for (const char* f : {"-fno-trapping-math", "-fno-math-errno", "-std=c++17", "-ffp-contract=fast",
                        "-fPIC", "-shared"}) {
    o.flags.push_back(f);
  }
  return o;
}

}  // namespace yoloc::codegen::cpu
