// yoloc exec MODEL --input NAME=FILE.npy ... --output-dir DIR [-O0]
#include <fmt/format.h>

#include <filesystem>

#include "core/npy.h"
#include "frontend/onnx/importer.h"
#include "ops/reference_executor.h"
#include "passes/pipeline.h"
#include "tools/commands.h"

namespace yoloc::tools {

namespace {

struct ExecOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int opt_level = 1;
  std::string dump_ir;
};

void run_exec(const ExecOptions& o) {
  auto g = onnx_frontend::import_onnx(o.model);
  std::map<std::string, Tensor> feeds;
  for (const std::string& spec : o.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      user_error("--input '{}' is malformed: expected NAME=FILE.npy", spec);
    const std::string name = spec.substr(0, eq);
    if (feeds.count(name)) user_error("--input '{}' is given twice", name);
    feeds[name] = read_npy(spec.substr(eq + 1));
  }
  PassContext ctx;
  ctx.opt_level = o.opt_level;
  ctx.dump_dir = o.dump_ir;
  optimize(*g, ctx);
  auto outputs = run_reference(*g, feeds);
  std::filesystem::create_directories(o.output_dir);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, t] : outputs) {
    std::string file = name;
    for (char& c : file)
      if (c == '/' || c == '\\' || c == ':') c = '_';
    write_npy((std::filesystem::path(o.output_dir) / (file + ".npy")).string(), t);
    list.push_back({{"name", name},
                    {"file", file + ".npy"},
                    {"dtype", dtype_name(t.dtype())},
                    {"shape", t.shape()}});
  }
  write_json_file((std::filesystem::path(o.output_dir) / "outputs.json").string(),
                  nlohmann::json{{"outputs", list}}, "--output-dir");
  fmt::print("wrote {} output(s) to {}\n", outputs.size(), o.output_dir);
}

}  // namespace

void add_exec(CLI::App& app) {
  auto o = std::make_shared<ExecOptions>();
  auto* c = app.add_subcommand("exec", "Run a model on .npy inputs with the reference executor");
  c->add_option("model", o->model, "ONNX model")->required();
  c->add_option("--input", o->inputs, "NAME=FILE.npy, once per model input")->required();
  c->add_option("--output-dir", o->output_dir, "where to write <output>.npy and outputs.json")
      ->required();
  c->add_option("-O", o->opt_level, "optimization level: -O0 runs the graph as imported")
      ->check(CLI::Range(0, 3));
  c->add_option("--dump-ir", o->dump_ir, "write the IR after each graph pass to DIR/NN-<pass>.txt");
  c->callback([o] { run_exec(*o); });
}

}  // namespace yoloc::tools
