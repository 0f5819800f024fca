// yoloc exec MODEL [--input NAME=FILE.npy ...] --output-dir DIR [-O0]
#include <fmt/format.h>

#include <filesystem>

#include "core/npy.h"
#include "frontend/onnx/importer.h"
#include "ops/reference_executor.h"
#include "passes/pipeline.h"
#include "runtime/engine.h"
#include "tools/artifact_options.h"
#include "tools/detector_model.h"
#include "tools/commands.h"

namespace yoloc::tools {

namespace {

struct ExecOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int opt_level = 1;
  std::string dump_ir;
  int threads = 1;
  int device = 0;
  std::vector<std::string> outputs;
  std::string precision = "auto";
  ArtifactLoadOptions load;
};

/// Runs a compiled artifact: feeds by the manifest's input names.
std::vector<NamedTensor> run_artifact(const ExecOptions& o, std::map<std::string, Tensor> feeds) {
  auto art = open_trusted_artifact(o.model, o.load);
  std::unique_ptr<runtime::Engine> engine =
      runtime::Engine::open(art, engine_options(o.load, o.threads > 0 ? o.threads : 1, o.device));
  std::vector<Tensor> inputs;
  for (const artifact::TensorSpec& spec : art->manifest().inputs) {
    auto it = feeds.find(spec.name);
    if (it == feeds.end())
      user_error("'{}' takes the input '{}'; pass --input {}=FILE.npy", o.model, spec.name,
                 spec.name);
    inputs.push_back(std::move(it->second));
    feeds.erase(it);
  }
  if (!feeds.empty())
    user_error("'{}' has no input '{}'", o.model, feeds.begin()->first);
  std::vector<Tensor> outs = engine->run(inputs);
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < outs.size(); ++i)
    named.push_back({art->manifest().outputs[i].name, std::move(outs[i])});
  return named;
}

void run_exec(const ExecOptions& o) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& spec : o.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      user_error("--input '{}' is malformed: expected NAME=FILE.npy", spec);
    const std::string name = spec.substr(0, eq);
    if (feeds.count(name)) user_error("--input '{}' is given twice", name);
    feeds[name] = read_npy(spec.substr(eq + 1));
  }
  std::vector<NamedTensor> outputs;
  if (is_artifact_path(o.model)) {
    outputs = run_artifact(o, std::move(feeds));
  } else {
    auto g = onnx_frontend::import_onnx(o.model);
    if (!o.outputs.empty()) select_outputs(*g, o.outputs, o.model);
    PassContext ctx;
    ctx.opt_level = o.opt_level;
    if (o.precision == "fp32") {
      ctx.precision = Precision::kFp32;
    } else if (o.precision != "auto") {
      user_error("--precision {}: exec takes auto (the model's own) or fp32 (quantized layers "
                 "rewritten to float, as the cpu target compiles them)", o.precision);
    }
    ctx.dump_dir = o.dump_ir;
    optimize(*g, ctx);
    outputs = run_reference(*g, feeds);
  }
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
  auto* c = app.add_subcommand("exec", "Run a model on .npy inputs (ONNX: the reference executor; .ycm: its kernels)");
  c->add_option("model", o->model, "ONNX model, or a compiled .ycm artifact")->required();
  c->add_option("--input", o->inputs, "NAME=FILE.npy, once per model input (none for a model "
                 "without inputs)");
  c->add_option("--output-dir", o->output_dir, "where to write <output>.npy and outputs.json")
      ->required();
  c->add_option("-O", o->opt_level, "optimization level: -O0 runs the graph as imported")
      ->check(CLI::Range(0, 3));
  c->add_option("--threads", o->threads, "threads running an artifact")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--device", o->device, "GPU running a CUDA artifact")->check(CLI::NonNegativeNumber);
  c->add_option("--outputs", o->outputs, "return these values of an ONNX model instead");
  c->add_option("--precision", o->precision,
                 "auto: compute as the model says; fp32: dequantize quantized layers, as "
                 "`compile --target cpu` does")
      ->capture_default_str();
  add_artifact_load_options(*c, o->load);
  c->add_option("--dump-ir", o->dump_ir, "write the IR after each graph pass to DIR/NN-<pass>.txt");
  c->callback([o] { run_exec(*o); });
}

}  // namespace yoloc::tools
