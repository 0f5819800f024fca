#pragma once
/// Errors of yoloc. A UserError is something the user can fix (bad model, unsupported op, bad
/// option, bad input); an InternalError is a broken invariant of yoloc itself. A user error must
/// never surface as an internal one or a crash.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace yoloc {

/// Base of all yoloc errors.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Something in the user's input is wrong: the message says what was expected, what was given,
/// where, and what to do.
class UserError : public Error {
 public:
  using Error::Error;
};

/// A broken invariant inside yoloc (a bug): please report it.
class InternalError : public Error {
 public:
  using Error::Error;
};

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
