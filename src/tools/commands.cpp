#include "tools/commands.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/error.h"

namespace yoloc::tools {

void add_commands(CLI::App& app) {
  add_exec(app);
  add_inspect(app);
  add_compile(app);
  add_calibrate(app);
  add_bench(app);
  add_profile(app);
  add_tune(app);
  add_run(app);
  add_eval(app);
  add_keygen(app);
  add_devices(app);
}

void write_json_file(const std::string& path, const nlohmann::json& j, const std::string& option) {
  std::ofstream f(path);
  if (!(f << j.dump(2) << "\n")) user_error("{}: cannot write '{}'", option, path);
}

namespace {
/// stdout kept for the JSON by keep_stdout_for_json, else null.
std::FILE* g_json_out = nullptr;
}  // namespace

void keep_stdout_for_json(const std::string& json) {
  if (json != "-" || g_json_out) return;
  std::fflush(stdout);
  const int fd = dup(STDOUT_FILENO);
  if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return;
  g_json_out = fdopen(fd, "w");
}

void write_json(const std::string& path, const nlohmann::json& j, const std::string& option) {
  if (path == "-") {
    std::FILE* out = g_json_out ? g_json_out : stdout;
    std::fputs((j.dump(2) + "\n").c_str(), out);
    std::fflush(out);
    return;
  }
  write_json_file(path, j, option);
}

}  // namespace yoloc::tools
