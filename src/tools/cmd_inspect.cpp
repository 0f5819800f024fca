// yoloc inspect MODEL [--json FILE|-] [--dot FILE] [--dim NAME=VALUE ...]: what a model is made of.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "frontend/onnx/importer.h"
#include "ir/dot.h"
#include "ir/op_registry.h"
#include "passes/layout_selection.h"
#include "passes/pipeline.h"
#include "targets/target.h"
#include "tools/commands.h"
#include "tools/detector_model.h"
#include "tools/inspect_artifact.h"

extern char** environ;

namespace yoloc::tools {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct InspectOptions {
  std::string model;
  std::string json;
  std::string dot;
  std::vector<std::string> dims;
  bool passes = false;
  int opt_level = 1;
  std::string target = "reference";
  ArtifactLoadOptions load;  ///< --trust: artifacts
};

/// The optimizer's work on the model: the pass log and the fused kernels.
struct Optimized {
  std::unique_ptr<Graph> graph;
  std::vector<PassStat> passes;
  size_t kernels = 0;
  std::vector<std::pair<std::string, int>> breakdown;  ///< kernel name -> count, by count
  std::map<std::string, int> layouts;  ///< 4-D activations per layout
  size_t layout_conversions = 0;
};

Optimized optimize_copy(const Graph& g, int opt_level, const std::string& target) {
  Optimized o;
  o.graph = g.clone();
  PassContext ctx;
  ctx.opt_level = opt_level;
  ctx.target = targets::attributes(target);
  optimize(*o.graph, ctx);
  o.passes = ctx.stats;
  o.kernels = kernel_count(*o.graph);
  std::map<std::string, int> hist;
  for (const FusedGroup& grp : o.graph->groups)
    if (grp.is_kernel()) ++hist[grp.name];
  o.breakdown.assign(hist.begin(), hist.end());
  for (const Value* v : o.graph->values())
    if (!v->is_constant() && v->type.has_rank && v->type.rank() == 4) ++o.layouts[v->layout.str()];
  o.layout_conversions = count_layout_conversions(*o.graph);
  std::stable_sort(o.breakdown.begin(), o.breakdown.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return o;
}

/// FLOPs of the whole graph, summed from OpDef::flops where an op defines it.
struct FlopCount {
  int64_t total = 0;
  int counted_nodes = 0;
  std::set<std::string> uncounted_ops;
  std::set<std::string> symbols;  ///< symbolic or unknown input dims: nothing is counted
};

struct Summary {
  std::vector<std::pair<std::string, int>> ops;  ///< by decreasing count
  int64_t param_count = 0;
  int64_t param_bytes = 0;
  int constants = 0;
  FlopCount flops;
};

Summary summarize(const Graph& g) {
  Summary s;
  std::map<std::string, int> hist;
  for (const Node* n : g.nodes()) ++hist[n->op];
  s.ops.assign(hist.begin(), hist.end());
  std::stable_sort(s.ops.begin(), s.ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const Value* v : g.values()) {
    if (!v->is_constant()) continue;
    ++s.constants;
    s.param_count += v->data.numel();
    s.param_bytes += static_cast<int64_t>(v->data.nbytes());
  }
  for (const Value* in : g.inputs)
    for (const Dim& d : in->type.dims)
      if (!d.known()) s.flops.symbols.insert(d.symbol.empty() ? in->name + ":?" : d.symbol);
  if (!s.flops.symbols.empty()) return s;
  for (const Node* n : g.nodes()) {
    if (n->def && n->def->flops) {
      s.flops.total += n->def->flops(*n);
      ++s.flops.counted_nodes;
    } else {
      s.flops.uncounted_ops.insert(n->op);
    }
  }
  return s;
}

/// "12.3 MiB"-style sizes and "8.70 G"-style counts.
std::string human(double v, double base, const char* const* units) {
  int i = 0;
  while (v >= base && units[i + 1]) {
    v /= base;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} {}", v, units[0]) : fmt::format("{:.2f} {}", v, units[i]);
}
std::string human_bytes(double v) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", nullptr};
  return human(v, 1024, kUnits);
}
std::string human_count(double v) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T", nullptr};
  return human(v, 1000, kUnits);
}

json dims_json(const TensorType& t) {
  if (!t.has_rank) return nullptr;
  json dims = json::array();
  for (const Dim& d : t.dims) {
    if (d.known())
      dims.push_back(d.value);
    else if (!d.symbol.empty())
      dims.push_back(d.symbol);
    else
      dims.push_back(nullptr);
  }
  return dims;
}

json values_json(const std::vector<Value*>& values) {
  json list = json::array();
  for (const Value* v : values)
    list.push_back({{"name", v->name},
                    {"dtype", dtype_name(v->type.dtype)},
                    {"shape", dims_json(v->type)},
                    {"type", v->type.str()}});
  return list;
}

json optimized_json(const Optimized& opt) {
  json passes = json::array();
  for (const PassStat& p : opt.passes)
    passes.push_back({{"name", p.name}, {"nodes_after", p.nodes_after}, {"ms", p.ms}});
  json kernels = json::object();
  for (const auto& [name, n] : opt.breakdown) kernels[name] = n;
  return {{"nodes", opt.graph->num_nodes()},
          {"kernels", opt.kernels},
          {"layouts", opt.layouts},
          {"layout_conversions", opt.layout_conversions},
          {"kernel_breakdown", kernels},
          {"passes", passes}};
}

json to_json(const InspectOptions& o, const Graph& g, const Summary& s) {
  json ops = json::object();
  for (const auto& [op, n] : s.ops) ops[op] = n;
  json flops{{"total", nullptr},
             {"counted_nodes", s.flops.counted_nodes},
             {"uncounted_ops", s.flops.uncounted_ops},
             {"symbolic_dims", s.flops.symbols}};
  if (s.flops.symbols.empty()) flops["total"] = s.flops.total;
  return {{"model", o.model},
          {"producer", g.producer},
          {"graph_name", g.name},
          {"opset", g.opset},
          {"inputs", values_json(g.inputs)},
          {"outputs", values_json(g.outputs)},
          {"nodes", g.num_nodes()},
          {"ops", ops},
          {"parameters",
           {{"count", s.param_count}, {"bytes", s.param_bytes}, {"constants", s.constants}}},
          {"flops", flops},
          {"metadata", g.metadata}};
}

void print_values(const char* title, const std::vector<Value*>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    fmt::print("{:<10}{}: {}\n", i == 0 ? title : "", values[i]->name, values[i]->type.str());
}

void print_optimized(const InspectOptions& o, const Optimized& opt) {
  if (o.passes) {
    fmt::print("{:<10}{:<24}{:>8}{:>10}\n", "passes", "pass", "nodes", "ms");
    for (const PassStat& p : opt.passes)
      fmt::print("{:<10}{:<24}{:>8}{:>10.2f}\n", "", p.name, p.nodes_after, p.ms);
  }
  double total_ms = 0;
  for (const PassStat& p : opt.passes) total_ms += p.ms;
  std::vector<std::string> kinds;
  for (const auto& [name, n] : opt.breakdown) kinds.push_back(fmt::format("{} {}", name, n));
  fmt::print("{:<10}-O{}: {} nodes, {} kernels in {:.1f} ms of passes: {}\n", "optimized",
             o.opt_level, opt.graph->num_nodes(), opt.kernels, total_ms, fmt::join(kinds, ", "));
  std::vector<std::string> layouts;
  for (const auto& [name, n] : opt.layouts) layouts.push_back(fmt::format("{} {}", name, n));
  fmt::print("{:<10}target {}: 4-D activations {}; {} layout conversions at the edges\n", "layouts",
             o.target, fmt::join(layouts, ", "), opt.layout_conversions);
}

void print_text(const InspectOptions& o, const Graph& g, const Summary& s) {
  constexpr size_t kMaxMetadataChars = 100;
  fmt::print("{:<10}{}\n", "model", o.model);
  fmt::print("{:<10}{}{}, ai.onnx opset {}\n", "producer", g.producer.empty() ? "?" : g.producer,
             g.name.empty() ? "" : fmt::format(" (graph '{}')", g.name), g.opset);
  print_values("inputs", g.inputs);
  print_values("outputs", g.outputs);
  std::vector<std::string> hist;
  for (const auto& [op, n] : s.ops) hist.push_back(fmt::format("{} {}", op, n));
  fmt::print("{:<10}{}: {}\n", "nodes", g.num_nodes(), fmt::join(hist, ", "));
  fmt::print("{:<10}{} elements, {} in {} constants\n", "params", s.param_count,
             human_bytes(static_cast<double>(s.param_bytes)), s.constants);
  if (!s.flops.symbols.empty()) {
    fmt::print(
        "{:<10}unknown: the input shape has symbolic dims ({}); fix them with --dim "
        "NAME=VALUE\n",
        "FLOPs", fmt::join(s.flops.symbols, ", "));
  } else if (s.flops.counted_nodes == 0) {
    fmt::print("{:<10}unknown: no op of this graph defines a FLOP count ({})\n", "FLOPs",
               fmt::join(s.flops.uncounted_ops, ", "));
  } else {
    const int nodes = static_cast<int>(g.num_nodes());
    fmt::print("{:<10}{}FLOPs ({} of {} nodes counted{})\n", "FLOPs",
               human_count(static_cast<double>(s.flops.total)), s.flops.counted_nodes, nodes,
               s.flops.uncounted_ops.empty()
                   ? ""
                   : fmt::format("; no FLOP count for {}", fmt::join(s.flops.uncounted_ops, ", ")));
  }
  bool first = true;
  for (const auto& [k, v] : g.metadata) {
    std::string value = v;
    std::replace(value.begin(), value.end(), '\n', ' ');
    if (value.size() > kMaxMetadataChars) value = value.substr(0, kMaxMetadataChars) + "...";
    fmt::print("{:<10}{}: {}\n", first ? "metadata" : "", k, value);
    first = false;
  }
}

/// Runs graphviz: dot -Tsvg -o svg dot_file. Returns false when `dot` cannot be started.
bool run_graphviz(const std::string& dot_file, const std::string& svg) {
  std::vector<std::string> args{"dot", "-Tsvg", "-o", svg, dot_file};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ) != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return false;
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127) return false;
  if (WEXITSTATUS(status) != 0)
    user_error("graphviz 'dot' failed (exit {}) making '{}' from '{}'", WEXITSTATUS(status), svg,
               dot_file);
  return true;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << text)) user_error("cannot write '{}'", path);
}

/// Writes the DOT file, and the SVG when graphviz is there: FILE.svg gets only the SVG, any other
/// FILE gets the DOT text and an SVG beside it (FILE with extension .svg).
void export_dot(const Graph& g, const std::string& file) {
  const std::string text = to_dot(g);
  const fs::path path(file);
  if (path.extension() == ".svg") {
    const std::string tmp = file + ".dot.tmp";
    write_text(tmp, text);
    const bool ok = run_graphviz(tmp, file);
    fs::remove(tmp);
    if (!ok)
      user_error(
          "cannot write '{}': graphviz 'dot' is not on PATH (install graphviz, or ask for a "
          ".dot file)",
          file);
    fmt::print(stderr, "wrote {}\n", file);
    return;
  }
  write_text(file, text);
  fs::path svg = path;
  svg.replace_extension(".svg");
  if (run_graphviz(file, svg.string()))
    fmt::print(stderr, "wrote {} and {}\n", file, svg.string());
  else
    fmt::print(stderr, "wrote {} (graphviz 'dot' is not on PATH: no SVG)\n", file);
}

void run_inspect(const InspectOptions& o) {
  if (is_artifact_path(o.model)) {
    if (!o.dot.empty())
      user_error("--dot {}: a compiled artifact holds kernels, not a graph to draw; give the "
                 "ONNX model to draw its graph (see 'yoloc inspect --help')",
                 o.dot);
    inspect_artifact(o.model, o.json, o.load);
    return;
  }
  onnx_frontend::ImportOptions io;
  for (const std::string& spec : o.dims) {
    const auto eq = spec.find('=');
    char* end = nullptr;
    const long long v = eq == std::string::npos ? 0 : std::strtoll(spec.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end != '\0' || v <= 0)
      user_error(
          "--dim '{}' is malformed: expected NAME=VALUE with VALUE > 0 (NAME: a symbolic "
          "dim such as 'batch', or INPUT:AXIS)",
          spec);
    io.fix_dims[spec.substr(0, eq)] = v;
  }
  auto g = onnx_frontend::import_onnx(o.model, io);
  const Summary s = summarize(*g);
  const Optimized opt = optimize_copy(*g, o.opt_level, o.target);
  // The drawing shows what runs: the optimized graph with its fused kernels as clusters.
  if (!o.dot.empty()) export_dot(o.opt_level > 0 ? *opt.graph : *g, o.dot);
  if (!o.json.empty()) {
    json j = to_json(o, *g, s);
    j["optimized"] = optimized_json(opt);
    write_json(o.json, j, "--json");
  }
  if (o.json != "-") {
    print_text(o, *g, s);
    print_optimized(o, opt);
  }
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  auto* c = app.add_subcommand("inspect", "Show a model's inputs, outputs, ops, size and FLOPs");
  c->add_option("model", o->model, "ONNX model, or a compiled .ycm artifact")->required();
  c->add_option("--json", o->json,
                "write the summary as JSON to FILE, or to stdout with '-' (instead of the text)");
  c->add_option("--dot", o->dot,
                "write the graph as Graphviz DOT to FILE (and FILE's .svg beside it when "
                "graphviz is installed); a FILE ending in .svg gets the SVG");
  c->add_option("--dim", o->dims, "NAME=VALUE: fix a symbolic input dim (e.g. batch=1)");
  c->add_flag("--passes", o->passes, "print each graph pass with its node count and time");
  c->add_option("-O", o->opt_level, "optimization level of the optimized view (-O0: none)")
      ->check(CLI::Range(0, 3));
  c->add_option("--target", o->target,
                "target whose layouts the optimized view chooses: reference, or a target of "
                "this build (cpu, cuda, ...) or one of its variants (cpu-avx2, cpu-neon)");
  add_artifact_load_options(*c, o->load, /*memory=*/false);
  c->callback([o] { run_inspect(*o); });
}

}  // namespace yoloc::tools
