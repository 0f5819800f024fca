#pragma once
/// Raising yoloc's errors (yoloc/error.h) with fmt-formatted messages, and YOLOC_CHECK.
#include <fmt/format.h>

#include <string>

#include "yoloc/error.h"

namespace yoloc {

/// Throws a UserError with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

/// Throws an InternalError with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> f, Args&&... args) {
  throw InternalError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace yoloc

/// Checks an internal invariant; failure is a yoloc bug, not a user error.
#define YOLOC_CHECK(cond, ...)                                                              \
  do {                                                                                      \
    if (!(cond))                                                                            \
      ::yoloc::internal_error("internal check failed at {}:{}: {}: {}", __FILE__, __LINE__, \
                              #cond, ::fmt::format(__VA_ARGS__));                           \
  } while (0)
