#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace yoloc::tools {

/// Registers every subcommand; each lives in its own cmd_<name>.cpp with an add_<name>(app).
void add_commands(CLI::App& app);

void add_exec(CLI::App& app);
void add_inspect(CLI::App& app);
void add_run(CLI::App& app);
void add_eval(CLI::App& app);
void add_compile(CLI::App& app);
void add_calibrate(CLI::App& app);
void add_bench(CLI::App& app);
void add_profile(CLI::App& app);
void add_tune(CLI::App& app);
void add_keygen(CLI::App& app);
void add_devices(CLI::App& app);

/// Writes `j`, indented, to the file `path`; a file that cannot be written is a UserError that
/// names the command-line `option` the path came from.
void write_json_file(const std::string& path, const nlohmann::json& j, const std::string& option);
/// `--json FILE` as every command takes it: '-' prints `j` to stdout, anything else is a file
/// (write_json_file).
void write_json(const std::string& path, const nlohmann::json& j, const std::string& option);
/// For a command that prints text as it goes: with `--json -` (json == "-"), the text goes to
/// stderr from now on and stdout carries write_json's JSON alone.
void keep_stdout_for_json(const std::string& json);

}  // namespace yoloc::tools
