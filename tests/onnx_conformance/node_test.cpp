#include "onnx_conformance/node_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "onnx_conformance/tolerance.h"
#include "ops/reference_executor.h"

namespace yoloc::conformance {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxReasonChars = 400;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) user_error("cannot read '{}'", p.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// One line, at most kMaxReasonChars long (the unsupported-op message lists every op).
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > kMaxReasonChars) s = s.substr(0, kMaxReasonChars) + "...";
  return s;
}

/// Element types newer than the linked onnx protobuf may know (onnx.proto's TensorProto codes).
constexpr std::pair<int32_t, const char*> kNewerDtypes[] = {
    {17, "FLOAT8E4M3FN"}, {18, "FLOAT8E4M3FNUZ"}, {19, "FLOAT8E5M2"}, {20, "FLOAT8E5M2FNUZ"},
    {21, "UINT4"},        {22, "INT4"},           {23, "FLOAT4E2M1"}, {24, "FLOAT8E8M0"},
    {25, "UINT2"},        {26, "INT2"},           {27, "FLOAT6E2M3"}, {28, "FLOAT6E3M2"}};

std::string dtype_reason(int32_t elem_type, const std::string& where) {
  if (onnx_frontend::dtype_from_onnx(elem_type) != DType::kUndefined) return "";
  std::string name = onnx::TensorProto_DataType_IsValid(elem_type)
                         ? onnx::TensorProto_DataType_Name(elem_type)
                         : fmt::format("#{}", elem_type);
  for (const auto& [code, newer] : kNewerDtypes)
    if (code == elem_type) name = newer;
  return fmt::format("unsupported dtype {} in {}", name, where);
}

std::string type_reason(const onnx::TypeProto& t, const std::string& where) {
  switch (t.value_case()) {
    case onnx::TypeProto::kTensorType: return dtype_reason(t.tensor_type().elem_type(), where);
    case onnx::TypeProto::kSequenceType: return "unsupported type sequence in " + where;
    case onnx::TypeProto::kOptionalType: return "unsupported type optional in " + where;
    case onnx::TypeProto::kMapType: return "unsupported type map in " + where;
    case onnx::TypeProto::kSparseTensorType: return "unsupported type sparse tensor in " + where;
    default: return "value without a type in " + where;
  }
}

/// Attributes that name an element type (Cast's `to`, EyeLike's `dtype`, ...).
bool is_dtype_attr(const onnx::AttributeProto& a) {
  return a.type() == onnx::AttributeProto::INT &&
         (a.name() == "to" || a.name() == "dtype" || a.name() == "output_dtype");
}

std::string snake_case(const std::string& op) {
  std::string s;
  for (size_t i = 0; i < op.size(); ++i) {
    const char c = op[i];
    const bool upper = std::isupper(static_cast<unsigned char>(c));
    // A new word starts at an upper-case letter after a lower-case one, or before a lower-case one
    // in an acronym run (GRU, ReduceL1 -> reduce_l1, MatMulInteger -> mat_mul_integer).
    if (upper && i > 0 &&
        (std::islower(static_cast<unsigned char>(op[i - 1])) ||
         (i + 1 < op.size() && std::islower(static_cast<unsigned char>(op[i + 1])) &&
          std::isupper(static_cast<unsigned char>(op[i - 1])))))
      s += '_';
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

/// input_<j>.pb / output_<j>.pb of a data set, in order.
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int j = 0;; ++j) {
    fs::path p = dir / fmt::format("{}_{}.pb", prefix, j);
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

Tensor read_tensor(const fs::path& p) {
  onnx::TensorProto tp;
  if (!tp.ParseFromString(read_file(p))) user_error("'{}' is not a TensorProto", p.string());
  return onnx_frontend::tensor_from_proto(tp);
}

/// ONNX 1.12 wrote bfloat16 test data as UINT16 TensorProtos of the bit patterns (numpy has no
/// bfloat16); such a tensor for a value the model declares BFLOAT16 is read back as bfloat16.
Tensor as_declared(Tensor t, const onnx::ValueInfoProto& declared) {
  if (t.dtype() != DType::kUInt16 ||
      declared.type().tensor_type().elem_type() != onnx::TensorProto::BFLOAT16)
    return t;
  Tensor b(DType::kBFloat16, t.shape());
  if (t.nbytes() > 0) std::memcpy(b.raw(), t.raw(), t.nbytes());
  return b;
}

/// Runs every data set; returns "" when all outputs agree, else the first disagreement.
std::string run_data_sets(const fs::path& dir, const onnx::ModelProto& m) {
  auto g = onnx_frontend::import_onnx((dir / "model.onnx").string());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : m.graph().input()) {
    bool is_init = false;
    for (const auto& init : m.graph().initializer()) is_init |= init.name() == in.name();
    if (!is_init) inputs.push_back(&in);
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_* folder";
  for (const fs::path& set : sets) {
    const std::string set_name = set.filename().string();
    const std::vector<fs::path> ins = numbered(set, "input");
    const std::vector<fs::path> outs = numbered(set, "output");
    if (ins.size() > inputs.size())
      return fmt::format("{}: {} input files for {} graph inputs", set_name, ins.size(),
                         inputs.size());
    if (outs.size() > static_cast<size_t>(m.graph().output_size()))
      return fmt::format("{}: {} output files for {} graph outputs", set_name, outs.size(),
                         m.graph().output_size());
    std::map<std::string, Tensor> feeds;
    for (size_t j = 0; j < ins.size(); ++j) {
      const std::string& name = inputs[j]->name();
      // The importer drops inputs that nothing reads; feeding them would be an error.
      const bool used = std::any_of(g->inputs.begin(), g->inputs.end(),
                                    [&](const Value* v) { return v->name == name; });
      if (used) feeds[name] = as_declared(read_tensor(ins[j]), *inputs[j]);
    }
    const std::vector<NamedTensor> got = run_reference(*g, feeds);
    if (got.size() != outs.size())
      return fmt::format("{}: the graph gave {} outputs, {} expected", set_name, got.size(),
                         outs.size());
    for (size_t j = 0; j < outs.size(); ++j) {
      const Tensor expected =
          as_declared(read_tensor(outs[j]), m.graph().output(static_cast<int>(j)));
      const std::string diff = compare_tensors(expected, got[j].tensor);
      if (!diff.empty())
        return fmt::format("{}: output {} '{}': {}", set_name, j, got[j].name, diff);
    }
  }
  return "";
}

}  // namespace

ExclusionList read_exclusions(const fs::path& path) {
  ExclusionList list;
  std::istringstream in(read_file(path));
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::string suite;
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '[') {
      const auto close = line.find(']', first);
      if (close == std::string::npos)
        user_error("{}:{}: '[' without ']'; write '[<suite>] <test name> <reason>'",
                   path.string(), lineno);
      suite = line.substr(first + 1, close - first - 1);
      line = line.substr(close + 1);
    }
    std::istringstream ls(line);
    std::string name;
    if (!(ls >> name)) {
      if (suite.empty()) continue;
      user_error("{}:{}: '[{}]' without a test name", path.string(), lineno, suite);
    }
    std::string reason;
    std::getline(ls >> std::ws, reason);
    while (!reason.empty() && std::isspace(static_cast<unsigned char>(reason.back())))
      reason.pop_back();
    if (reason.empty())
      user_error("{}:{}: '{}' has no reason; write '<test name> <why it cannot pass>'",
                 path.string(), lineno, name);
    list[suite.empty() ? name : "[" + suite + "] " + name] = reason;
  }
  return list;
}

std::string unsupported_reason(const onnx::ModelProto& m, std::string* op) {
  const auto& gp = m.graph();
  // Ops of other domains first: such models (training ops, ai.onnx.ml) often import no ai.onnx
  // opset at all.
  for (const auto& n : gp.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      *op = n.domain() + "." + n.op_type();
      return "unsupported op " + *op;
    }
  }
  int64_t opset = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0) return "the model imports no ai.onnx opset";
  if (opset < onnx_frontend::kMinOpset || opset > onnx_frontend::kMaxOpset)
    return fmt::format("opset {} out of range (yoloc supports {}..{})", opset,
                       onnx_frontend::kMinOpset, onnx_frontend::kMaxOpset);
  for (const auto& n : gp.node()) {
    int min_since = 0;
    if (!onnx_frontend::ConverterRegistry::global().find(n.op_type(), opset, &min_since)) {
      *op = n.op_type();
      if (min_since > opset)
        return fmt::format("opset {} out of range for {} (supported from opset {})", opset,
                           n.op_type(), min_since);
      return "unsupported op " + n.op_type();
    }
  }
  for (const auto& v : gp.input())
    if (auto r = type_reason(v.type(), "input '" + v.name() + "'"); !r.empty()) return r;
  for (const auto& v : gp.output())
    if (auto r = type_reason(v.type(), "output '" + v.name() + "'"); !r.empty()) return r;
  for (const auto& v : gp.value_info())
    if (auto r = type_reason(v.type(), "value '" + v.name() + "'"); !r.empty()) return r;
  for (const auto& t : gp.initializer())
    if (auto r = dtype_reason(t.data_type(), "initializer '" + t.name() + "'"); !r.empty())
      return r;
  for (const auto& n : gp.node()) {
    for (const auto& a : n.attribute()) {
      const std::string where = fmt::format("attribute '{}' of {}", a.name(), n.op_type());
      if (is_dtype_attr(a))
        if (auto r = dtype_reason(static_cast<int32_t>(a.i()), where); !r.empty()) return r;
      if (a.has_t())
        if (auto r = dtype_reason(a.t().data_type(), where); !r.empty()) return r;
      for (const auto& t : a.tensors())
        if (auto r = dtype_reason(t.data_type(), where); !r.empty()) return r;
    }
  }
  return "";
}

std::string main_op(const onnx::ModelProto& m, const std::string& test_name) {
  std::string best;
  size_t best_len = 0;
  for (const auto& n : m.graph().node()) {
    const std::string prefix = "test_" + snake_case(n.op_type());
    const bool match = test_name.rfind(prefix, 0) == 0 &&
                       (test_name.size() == prefix.size() || test_name[prefix.size()] == '_');
    if (match && prefix.size() > best_len) {
      best = n.op_type();
      best_len = prefix.size();
    }
  }
  if (best.empty() && m.graph().node_size() > 0) best = m.graph().node(0).op_type();
  return best;
}

TestResult run_node_test(const fs::path& dir, const ExclusionList& exclusions,
                         const std::string& suite) {
  TestResult r;
  r.name = dir.filename().string();
  auto listed = exclusions.find("[" + suite + "] " + r.name);
  if (listed == exclusions.end()) listed = exclusions.find(r.name);
  r.listed = listed != exclusions.end();
  try {
    onnx::ModelProto m;
    if (!m.ParseFromString(read_file(dir / "model.onnx"))) {
      r.reason = "model.onnx does not parse";
      return r;
    }
    r.op = main_op(m, r.name);
    std::string unsupported_op;
    r.reason = unsupported_reason(m, &unsupported_op);
    if (!r.reason.empty()) {
      if (!unsupported_op.empty()) r.op = unsupported_op;
      r.outcome = Outcome::kExcluded;
      r.listed = false;
      return r;
    }
    r.reason = run_data_sets(dir, m);
  } catch (const UserError& e) {
    r.reason = std::string("user error: ") + e.what();
  } catch (const InternalError& e) {
    r.reason = std::string("internal error: ") + e.what();
  } catch (const std::exception& e) {
    r.reason = std::string("exception: ") + e.what();
  }
  r.reason = one_line(r.reason);
  if (r.reason.empty()) {
    r.outcome = Outcome::kPass;
  } else if (r.listed) {
    r.outcome = Outcome::kExcluded;
    r.reason = listed->second + " (listed in exclusions.txt; got: " + r.reason + ")";
  } else {
    r.outcome = Outcome::kFail;
  }
  return r;
}

}  // namespace yoloc::conformance
