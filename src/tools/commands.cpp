#include "tools/commands.h"

namespace yoloc::tools {

void add_commands(CLI::App& app) {
  add_exec(app);
  add_inspect(app);
  add_run(app);
  add_eval(app);
}

}  // namespace yoloc::tools
