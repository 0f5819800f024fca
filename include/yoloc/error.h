#pragma once
/// Errors of yoloc. A UserError is something the user can fix (bad model, unsupported op, bad
/// option, bad input); an InternalError is a broken invariant of yoloc itself. A user error must
/// never surface as an internal one or a crash.
#include <stdexcept>

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

}  // namespace yoloc
