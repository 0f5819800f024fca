#include "tools/commands.h"
namespace yoloc::tools {
void add_inspect(CLI::App&) {}
}
