// yoloc_conformance: runs ONNX node test suites on the reference executor.
//
//   yoloc_conformance [--exclusions FILE] [--json FILE] [--filter SUBSTRING] [--min-pass-rate PCT]
//                     --suite NAME=DIR [--suite NAME=DIR ...]
//
// Exit status 0 when every suite passes at least --min-pass-rate percent of its tests of
// supported ops and no failure is missing from the exclusions file; 1 otherwise; 2 for bad usage.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "onnx_conformance/node_test.h"

namespace fs = std::filesystem;
using yoloc::conformance::ExclusionList;
using yoloc::conformance::Outcome;
using yoloc::conformance::TestResult;

namespace {

constexpr double kDefaultMinPassRate = 95.0;

// Tests run in-process, so a crash in a reference kernel ends the run: it is a bug to fix, not a
// failure to count. The handler names the test that crashed, then hands the signal back to the
// previous handler (the default one, or a sanitizer's, which prints its report).
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[sizeof(kCrashSignals) / sizeof(int)];
char g_current_test[512] = "";

void on_crash(int sig) {
  const char prefix[] = "\nCRASH    while running ";
  const char suffix[] = " (a yoloc bug: please report it)\n";
  (void)!write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
  (void)!write(STDERR_FILENO, g_current_test, std::strlen(g_current_test));
  (void)!write(STDERR_FILENO, suffix, sizeof(suffix) - 1);
  for (size_t i = 0; i < std::size(kCrashSignals); ++i)
    if (kCrashSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  // Returning re-executes the faulting instruction (or abort() re-raises) under the old handler.
}

void install_crash_handler() {
  for (size_t i = 0; i < std::size(kCrashSignals); ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    sigaction(kCrashSignals[i], &sa, &g_previous[i]);
  }
}

struct Suite {
  std::string name;
  fs::path dir;
  std::vector<TestResult> results;
  int passed = 0;
  int failed = 0;
  int listed = 0;    ///< excluded by exclusions.txt: still tests of supported ops
  int excluded = 0;  ///< all excluded, listed included
  int stale = 0;     ///< listed but passing

  int supported() const { return passed + failed + listed; }
  double pass_rate() const { return supported() ? 100.0 * passed / supported() : 100.0; }
};

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kExcluded: return "excluded";
  }
  return "?";
}

void run_suite(Suite& s, const ExclusionList& exclusions, const std::string& filter) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(s.dir))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) {
    if (!filter.empty() && d.filename().string().find(filter) == std::string::npos) continue;
    std::snprintf(g_current_test, sizeof(g_current_test), "[%s] %s", s.name.c_str(),
                  d.filename().string().c_str());
    TestResult r = yoloc::conformance::run_node_test(d, exclusions, s.name);
    switch (r.outcome) {
      case Outcome::kPass:
        ++s.passed;
        if (r.listed) {
          ++s.stale;
          fmt::print("STALE    [{}] {}: passes but is listed in exclusions.txt; remove it\n",
                     s.name, r.name);
        }
        break;
      case Outcome::kFail:
        ++s.failed;
        fmt::print("FAIL     [{}] {}: {}\n", s.name, r.name, r.reason);
        break;
      case Outcome::kExcluded:
        ++s.excluded;
        s.listed += r.listed;
        fmt::print("EXCLUDED [{}] {}: {}\n", s.name, r.name, r.reason);
        break;
    }
    std::fflush(stdout);
    s.results.push_back(std::move(r));
  }
}

/// "Conv: unsupported op Conv (12)"-style lines, one per op, reasons with counts.
void print_exclusions_by_op(const Suite& s) {
  std::map<std::string, std::map<std::string, int>> by_op;
  for (const TestResult& r : s.results) {
    if (r.outcome != Outcome::kExcluded) continue;
    // Group by the kind of reason: "unsupported dtype X in input 'a'" without the value name,
    // "unsupported op X" without the op (it is the group's).
    std::string kind = r.listed ? "listed in exclusions.txt" : r.reason;
    const auto in = kind.find(" in ");
    if (!r.listed && in != std::string::npos) kind.resize(in);
    if (kind == "unsupported op " + r.op) kind = "unsupported op";
    ++by_op[r.op.empty() ? "?" : r.op][kind];
  }
  if (by_op.empty()) return;
  fmt::print("Exclusions by op ({}):\n", s.name);
  for (const auto& [op, reasons] : by_op) {
    std::vector<std::string> parts;
    for (const auto& [reason, n] : reasons) parts.push_back(fmt::format("{} ({})", reason, n));
    fmt::print("  {}: {}\n", op, fmt::join(parts, "; "));
  }
}

nlohmann::json suite_json(const Suite& s) {
  nlohmann::json tests = nlohmann::json::array();
  for (const TestResult& r : s.results)
    tests.push_back({{"name", r.name},
                     {"status", outcome_name(r.outcome)},
                     {"op", r.op},
                     {"reason", r.reason},
                     {"listed", r.listed}});
  return {{"name", s.name},
          {"dir", s.dir.string()},
          {"passed", s.passed},
          {"failed", s.failed},
          {"listed", s.listed},
          {"excluded", s.excluded},
          {"supported", s.supported()},
          {"pass_rate", s.pass_rate()},
          {"tests", tests}};
}

[[noreturn]] void usage(const std::string& msg) {
  fmt::print(stderr,
             "error: {}\nusage: yoloc_conformance [--exclusions FILE] [--json FILE] "
             "[--filter SUBSTRING] [--min-pass-rate PCT] --suite NAME=DIR ...\n",
             msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Suite> suites;
  std::string exclusions_file, json_file, filter;
  double min_pass_rate = kDefaultMinPassRate;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--suite") {
      const std::string v = value();
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) usage("--suite expects NAME=DIR, got '" + v + "'");
      Suite s;
      s.name = v.substr(0, eq);
      s.dir = v.substr(eq + 1);
      suites.push_back(std::move(s));
    } else if (a == "--exclusions") {
      exclusions_file = value();
    } else if (a == "--json") {
      json_file = value();
    } else if (a == "--filter") {
      filter = value();
    } else if (a == "--min-pass-rate") {
      min_pass_rate = std::atof(value().c_str());
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (suites.empty()) usage("no --suite given");

  ExclusionList exclusions;
  try {
    if (!exclusions_file.empty()) exclusions = yoloc::conformance::read_exclusions(exclusions_file);
  } catch (const std::exception& e) {
    usage(e.what());
  }
  install_crash_handler();
  bool ok = true;
  for (Suite& s : suites) {
    if (!fs::is_directory(s.dir)) {
      fmt::print("ERROR    [{}] no test folder at {}\n", s.name, s.dir.string());
      ok = false;
      continue;
    }
    run_suite(s, exclusions, filter);
  }
  fmt::print("\n");
  for (const Suite& s : suites) {
    print_exclusions_by_op(s);
    fmt::print("\n");
  }
  for (const Suite& s : suites) {
    fmt::print(
        "ONNX node conformance ({}): {} passed / {} tests of supported ops ({:.1f}%), {} "
        "excluded ({} listed in exclusions.txt){}\n",
        s.name, s.passed, s.supported(), s.pass_rate(), s.excluded, s.listed,
        s.failed ? fmt::format(", {} FAILED (not in exclusions.txt)", s.failed) : "");
    if (s.failed > 0 || s.pass_rate() < min_pass_rate) ok = false;
  }
  if (!ok)
    fmt::print(
        "FAILED: every failure must be fixed or listed with its reason in exclusions.txt, "
        "and each suite must pass at least {:.0f}% of its tests of supported ops\n",
        min_pass_rate);
  if (!json_file.empty()) {
    nlohmann::json j{
        {"ok", ok}, {"min_pass_rate", min_pass_rate}, {"suites", nlohmann::json::array()}};
    for (const Suite& s : suites) j["suites"].push_back(suite_json(s));
    std::ofstream(json_file) << j.dump(2) << "\n";
  }
  return ok ? 0 : 1;
}
