#pragma once
#include <CLI/CLI.hpp>

namespace yoloc::tools {

/// Registers every subcommand; each lives in its own cmd_<name>.cpp with an add_<name>(app).
void add_commands(CLI::App& app);

void add_exec(CLI::App& app);
void add_inspect(CLI::App& app);
void add_run(CLI::App& app);
void add_eval(CLI::App& app);

}  // namespace yoloc::tools
