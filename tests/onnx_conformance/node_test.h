#pragma once
/// One ONNX node test (a folder with model.onnx and test_data_set_*/{input,output}_N.pb): whether
/// it tests only what yoloc supports, and its outcome on the reference executor.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <string>

namespace yoloc::conformance {

enum class Outcome { kPass, kFail, kExcluded };

struct TestResult {
  std::string name;
  Outcome outcome = Outcome::kFail;
  /// Why it failed or was excluded (one line); empty for a pass.
  std::string reason;
  /// The op the test is about, for grouping exclusions.
  std::string op;
  /// Listed in exclusions.txt: a test of supported ops that cannot pass for a stated reason.
  bool listed = false;
};

/// Test name -> reason, from exclusions.txt ("<test name> <reason>" lines, '#' comments). A line
/// "[<suite>] <test name> <reason>" applies to that suite only; its key is "[<suite>] <name>".
using ExclusionList = std::map<std::string, std::string>;

/// Reads an exclusions file; raises a UserError naming the line for a name without a reason.
ExclusionList read_exclusions(const std::filesystem::path& path);

/// Why the model cannot be a test of supported ops: "unsupported op X", "unsupported dtype
/// STRING in input 'x'", "opset 29 out of range (yoloc supports 1..28)", or "" when yoloc
/// supports all of it. `op` receives the op the reason is about, if any.
std::string unsupported_reason(const onnx::ModelProto& m, std::string* op);

/// The op a test is about: the model's op whose snake_case name is the longest prefix of the test
/// name (test_reduce_max_... -> ReduceMax), else the first node's op.
std::string main_op(const onnx::ModelProto& m, const std::string& test_name);

/// Classifies and, unless unsupported, runs the test in `dir` of suite `suite` on the reference
/// executor. Never throws: any error of yoloc on a test of supported ops is that test's failure.
TestResult run_node_test(const std::filesystem::path& dir, const ExclusionList& exclusions,
                         const std::string& suite = "");

}  // namespace yoloc::conformance
