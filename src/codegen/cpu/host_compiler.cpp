#include "codegen/cpu/host_compiler.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace

SharedObject compile_shared_object(const std::string& source, const HostCompilerOptions& opts) {
  const fs::path dir = make_temp_dir();
  const fs::path src = dir / "kernels.cpp", so = dir / "kernels.so", log = dir / "compile.log";
  write_file(src, source);
  std::vector<std::string> args = {opts.cxx};
  args.insert(args.end(), opts.flags.begin(), opts.flags.end());
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
  if (!opts.keep_dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    out.path.clear();
  }
  if (!ok) {
    user_error("the host compiler '{}' failed to build the generated kernels (exit status {}); "
               "check that it is installed and targets this machine (set --cc).\ncompiler log:\n{}",
               opts.cxx, status, out.log);
  }
  return out;
}

}  // namespace yoloc::codegen::cpu
