#include "frontend/onnx/importer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace yoloc::onnx_frontend {

namespace {

int64_t default_opset(const onnx::ModelProto& m, const std::string& what) {
  int64_t opset = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0) user_error("{}: the model imports no ai.onnx opset", what);
  if (opset < kMinOpset || opset > kMaxOpset)
    user_error("{}: opset {} is not supported (yoloc supports ai.onnx opsets {} to {}); convert "
               "it with onnx.version_converter",
               what, opset, kMinOpset, kMaxOpset);
  return opset;
}

[[noreturn]] void unsupported_op(const onnx::NodeProto& n, int64_t opset, int min_since) {
  const auto ops = ConverterRegistry::global().op_types();
  if (min_since > opset)
    user_error("{} node '{}': yoloc supports {} from opset {} but the model uses opset {}",
               n.op_type(), n.name(), n.op_type(), min_since, opset);
  user_error("unsupported op '{}'{} (node '{}', opset {}). yoloc supports: {}", n.op_type(),
             n.domain().empty() ? "" : " in domain '" + n.domain() + "'", n.name(), opset,
             fmt::join(ops, ", "));
}

}  // namespace

std::unique_ptr<Graph> import_onnx(const std::string& path, const ImportOptions& opts) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    user_error("model file '{}' does not exist", path);
  if (std::filesystem::is_directory(path, ec))
    user_error("'{}' is a directory; expected an .onnx model file", path);
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("cannot read model file '{}': permission denied?", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return import_onnx_bytes(ss.str(), path, opts);
}

std::unique_ptr<Graph> import_onnx_bytes(const std::string& bytes, const std::string& what,
                                         const ImportOptions& opts) {
  if (bytes.empty()) user_error("model file '{}' is empty", what);
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes))
    user_error("'{}' is not a valid ONNX model: the protobuf does not parse (the file is "
               "truncated, corrupt, or not an ONNX file)",
               what);
  if (!m.has_graph() || m.ir_version() <= 0)
    user_error("'{}' parses as protobuf but is not an ONNX model (no {}); is it really an .onnx "
               "file?",
               what, m.has_graph() ? "ir_version" : "graph");
  const onnx::GraphProto& gp = m.graph();
  if (gp.node_size() == 0) user_error("'{}': the ONNX graph has no nodes", what);
  const int64_t opset = default_opset(m, what);

  auto g = std::make_unique<Graph>();
  g->opset = opset;
  g->name = gp.name();
  g->producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  for (const auto& p : m.metadata_props()) g->metadata[p.key()] = p.value();

  std::map<std::string, Value*> env;
  for (const auto& init : gp.initializer()) {
    if (env.count(init.name())) user_error("'{}': initializer '{}' is defined twice", what, init.name());
    env[init.name()] = g->add_constant(init.name(), tensor_from_proto(init));
  }
  for (const auto& in : gp.input()) {
    if (env.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    TensorType t = type_from_proto(in.type(), "input " + in.name());
    for (size_t i = 0; i < t.dims.size(); ++i) {
      auto by_sym = opts.fix_dims.find(t.dims[i].symbol);
      auto by_axis = opts.fix_dims.find(fmt::format("{}:{}", in.name(), i));
      if (!t.dims[i].symbol.empty() && by_sym != opts.fix_dims.end())
        t.dims[i] = Dim(by_sym->second);
      else if (by_axis != opts.fix_dims.end())
        t.dims[i] = Dim(by_axis->second);
    }
    Value* v = g->add_value(in.name(), t);
    g->inputs.push_back(v);
    env[in.name()] = v;
  }
  std::map<std::string, TensorType> declared;
  for (const auto& vi : gp.value_info())
    if (vi.has_type() && vi.type().has_tensor_type())
      declared[vi.name()] = type_from_proto(vi.type(), vi.name());
  for (const auto& o : gp.output())
    if (o.has_type()) declared[o.name()] = type_from_proto(o.type(), "output " + o.name());

  for (const auto& np : gp.node()) {
    if (!np.domain().empty() && np.domain() != "ai.onnx") unsupported_op(np, opset, 0);
    int min_since = 0;
    const ConverterFn* conv = ConverterRegistry::global().find(np.op_type(), opset, &min_since);
    if (!conv) unsupported_op(np, opset, min_since);
    std::vector<Value*> ins;
    for (const std::string& name : np.input()) {
      if (name.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = env.find(name);
      if (it == env.end())
        user_error("{} node '{}' reads '{}', which no earlier node, input or initializer defines "
                   "(the graph is malformed or not topologically sorted)",
                   np.op_type(), np.name(), name);
      ins.push_back(it->second);
    }
    if (np.output_size() == 0)
      user_error("{} node '{}' names no output (every ONNX node has a first output; the model is "
                 "malformed: re-export it)", np.op_type(), np.name());
    std::vector<std::string> outs(np.output().begin(), np.output().end());
    ConvertContext ctx(*g, np, opset, std::move(ins), attrs_from_proto(np), outs, declared);
    (*conv)(ctx);
    for (const std::string& o : outs) {
      if (o.empty()) continue;
      auto it = ctx.produced.find(o);
      if (it == ctx.produced.end())
        user_error("{} node '{}' names output '{}', which {} does not have at opset {} (the model "
                   "is malformed: re-export it)", np.op_type(), np.name(), o, np.op_type(), opset);
      if (env.count(o)) user_error("{} node '{}': value '{}' is defined twice", np.op_type(), np.name(), o);
      env[o] = it->second;
    }
  }
  for (const auto& o : gp.output()) {
    auto it = env.find(o.name());
    if (it == env.end()) user_error("'{}': graph output '{}' is never computed", what, o.name());
    g->outputs.push_back(it->second);
  }
  g->remove_dead();
  verify(*g);
  return g;
}

}  // namespace yoloc::onnx_frontend
