#pragma once
/// Small helpers shared by the unit tests that are not about one op or one graph: the message of
/// a UserError, and a scratch folder per test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"

namespace yoloc::testing {

/// The message of the UserError that `f` raises, or "" when it raises none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

/// A fresh, empty folder for the running test: <tmp>/yoloc_<prefix>_<test>_<pid> (the pid keeps
/// concurrent runs of one test apart).
inline std::filesystem::path temp_dir(const std::string& prefix) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() /
      ("yoloc_" + prefix + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
       "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace yoloc::testing
