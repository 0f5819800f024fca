#include "compiler/compile.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "detect/family.h"
#include "targets/target.h"

namespace yoloc::compiler {
namespace {

namespace fs = std::filesystem;

/// v's spec in an artifact whose batch is `lanes` copies of the graph's (a batch-first shape).
artifact::TensorSpec spec_of(const Value* v, int lanes = 1) {
  Shape shape = v->type.static_shape();
  if (!shape.empty()) shape[0] *= lanes;
  return {v->name, std::string(dtype_name(v->type.dtype)), shape};
}

void check_output(const std::string& model, const CompileOptions& o) {
  if (o.output.empty()) user_error("compile needs an output file: -o OUT.ycm");
  if (!is_artifact_path(o.output))
    user_error("-o {}: artifacts end in .ycm (run, eval and bench tell them by it)", o.output);
  std::error_code ec;
  if (fs::exists(o.output, ec)) {
    if (fs::equivalent(o.output, model, ec))
      user_error("-o {} is the model itself; choose another output file", o.output);
    if (!o.force)
      user_error("-o {}: the file exists; pass --force to overwrite it", o.output);
  }
}

}  // namespace

artifact::Manifest CompileJob::detector_manifest(const ImportedDetector& d, int lanes) const {
  const Graph& g = *d.graph;
  artifact::Manifest m;
  m.tool_version = YOLOC_VERSION;
  if (options.outputs.empty()) m.family = std::string(detect::family_name(d.config.family));
  for (const Value* v : g.inputs) m.inputs.push_back(spec_of(v, lanes));
  for (const Value* v : g.outputs) m.outputs.push_back(spec_of(v, lanes));
  m.class_names = d.names;
  m.preprocess = {{"kind", d.config.family == detect::Family::kYoloX ? "yolox" : "letterbox"},
                  {"height", d.config.input_h},
                  {"width", d.config.input_w}};
  m.postprocess = {{"conf", d.config.conf}, {"iou", d.config.iou}, {"max_det", d.config.max_det}};
  return m;
}

void CompileJob::write_artifact(artifact::ArtifactWriter& w, CompileReport& report) const {
  if (!options.sign_key.empty()) w.sign_with_key_file(options.sign_key);
  w.write(options.output);
  std::error_code ec;
  report.artifact_bytes = fs::file_size(options.output, ec);
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CompileJob::write_source(const std::string& source) const {
  if (options.emit_source.empty()) return;
  std::ofstream f(options.emit_source);
  if (!(f << source)) user_error("--emit-source: cannot write '{}'", options.emit_source);
}

void report_build(CompileReport& report, const std::vector<codegen::cpu::CompiledTask>& tasks,
                  const MemoryPlan& plan) {
  for (const codegen::cpu::CompiledTask& t : tasks)
    report.kernels.push_back({t.key, t.template_name, t.group_name, t.config.str(), t.tuned});
  report.arena_bytes = plan.arena_bytes;
  report.naive_arena_bytes = plan.naive_bytes;
}

codegen::BuildCache* kernel_cache(const CompileOptions& o) {
  if (o.no_cache) return nullptr;
  return o.sign_key.empty() ? &codegen::BuildCache::user() : &codegen::BuildCache::user_fill_only();
}

CompileReport compile(const std::string& model, const CompileOptions& options,
                      const Configs& configs) {
  const CompileJob job{model, options, configs, std::chrono::steady_clock::now()};
  check_output(model, options);
  // A bad signing key is reported before minutes of kernel builds, not after.
  if (!options.sign_key.empty()) (void)artifact::load_secret_key(options.sign_key);
  return targets::find_target(options.target).compile(job);
}

}  // namespace yoloc::compiler

namespace yoloc {

CompileReport compile(const std::string& model, const CompileOptions& options) {
  return compiler::compile(model, options, {});
}

std::vector<std::string> compile_targets() { return targets::target_names(); }

}  // namespace yoloc
