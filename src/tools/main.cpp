// The yoloc command line: a thin layer over the compiler and runtime APIs.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"yoloc: a deep-learning compiler and runtime for YOLO object detectors"};
  app.set_version_flag("--version", std::string("yoloc ") + YOLOC_VERSION);
  app.require_subcommand(1);
  yoloc::tools::add_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 through CLI11; a bad command line is a user error like any
    // other: one line, exit code 1.
    if (e.get_exit_code() == 0) return app.exit(e);
    // The help of the command being parsed (the last one named), else the overview's.
    std::string help = "yoloc --help";
    for (const CLI::App* sub : app.get_subcommands())
      help = "yoloc " + sub->get_name() + " --help";
    std::fprintf(stderr, "error: %s (see '%s')\n", e.what(), help.c_str());
    return 1;
  } catch (const yoloc::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const yoloc::InternalError& e) {
    std::fprintf(stderr, "internal error (a yoloc bug; please report it): %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
