#include "tools/commands.h"

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
}

void write_json_file(const std::string& path, const nlohmann::json& j, const std::string& option) {
  std::ofstream f(path);
  if (!(f << j.dump(2) << "\n")) user_error("{}: cannot write '{}'", option, path);
}

}  // namespace yoloc::tools
