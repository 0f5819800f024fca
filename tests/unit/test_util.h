#pragma once
/// Small helpers shared by the unit tests that are not about one op or one graph: the message of
/// a UserError, and a scratch folder per test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

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

/// The folders temp_dir made, removed when the test program exits (they were left in <tmp>).
struct TempDirs {
  std::vector<std::filesystem::path> made;
  TempDirs() = default;
  TempDirs(const TempDirs&) = delete;
  TempDirs& operator=(const TempDirs&) = delete;
  ~TempDirs() {
    for (const std::filesystem::path& d : made) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
inline TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

/// A fresh, empty folder for the running test: <tmp>/yoloc_<prefix>_<test>_<pid> (the pid keeps
/// concurrent runs of one test apart), removed when the test program exits.
inline std::filesystem::path temp_dir(const std::string& prefix) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() /
      ("yoloc_" + prefix + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
       "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  temp_dirs().made.push_back(d);
  return d;
}

}  // namespace yoloc::testing
