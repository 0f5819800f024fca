#pragma once
/// Runs a function in a forked child process with a deadline, so that code under test (a
/// generated kernel, a model built from tuned configs) cannot take the caller down with it.
#include <functional>
#include <optional>
#include <string>

namespace yoloc::tuner {

/// Forks; the child runs `fn` and sends back the string it returns. Returns that string, or
/// nullopt with `error` set when the child crashes, throws, or runs past `timeout_s` (it is
/// then killed). Only the calling thread exists in the child: `fn` must not need the others.
/// The fork takes the measurement workers' fork lock (fork_locked), so a worker that another
/// thread starts meanwhile holds none of this call's pipe.
std::optional<std::string> run_isolated(const std::function<std::string()>& fn, double timeout_s,
                                        std::string& error);

}  // namespace yoloc::tuner
