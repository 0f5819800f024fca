#pragma once
/// Runs a function in a forked child process with a deadline, so that code under test (a
/// generated kernel, a model built from tuned configs) cannot take the caller down with it.
#include <functional>
#include <optional>
#include <string>

namespace yoloc::tuner {

/// Forks; the child runs `fn` and sends back the string it returns. Returns that string, or
/// nullopt with `error` set when the child crashes, throws, or runs past `timeout_s` (it is
/// then killed). The caller should have no other threads running (only the calling thread
/// exists in the child).
std::optional<std::string> run_isolated(const std::function<std::string()>& fn, double timeout_s,
                                        std::string& error);

}  // namespace yoloc::tuner
