#include "tools/compile_model.h"

#include <fmt/format.h>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "artifact/artifact_writer.h"
#include "detect/family.h"
#include "passes/pipeline.h"
#include "tuner/records.h"

namespace yoloc::tools {
namespace {

namespace fs = std::filesystem;

artifact::TensorSpec spec_of(const Value* v) {
  return {v->name, std::string(dtype_name(v->type.dtype)), v->type.static_shape()};
}

void check_output(const CompileOptions& o) {
  if (o.output.empty()) user_error("compile needs an output file: -o OUT.ycm");
  if (!is_artifact_path(o.output))
    user_error("-o {}: artifacts end in .ycm (run, eval and bench tell them by it)", o.output);
  std::error_code ec;
  if (fs::exists(o.output, ec)) {
    if (fs::equivalent(o.output, o.model.path, ec))
      user_error("-o {} is the model itself; choose another output file", o.output);
    if (!o.force)
      user_error("-o {}: the file exists; pass --force to overwrite it", o.output);
  }
}

}  // namespace

CompileReport compile_model(const CompileOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  check_output(o);
  if (o.target != "cpu")
    user_error("--target {}: this build compiles for 'cpu' only", o.target);
  if (o.model.precision != "fp32" && o.model.precision != "auto")
    user_error("--precision {}: the cpu target computes in fp32 (quantized and fp16 models are "
               "compiled to fp32); pass --precision fp32",
               o.model.precision);

  ImportedDetector d = import_for_cpu(o.model, o.outputs);
  const Graph& g = *d.graph;

  codegen::cpu::CpuCompileOptions cpu;
  const std::string cxx = o.cc.empty() ? "c++" : o.cc;
  if (o.isa.empty()) {
    cpu.isa = codegen::cpu::default_isa_for_compiler(cxx);
  } else if (auto isa = codegen::cpu::parse_isa(o.isa)) {
    cpu.isa = *isa;
  } else {
    user_error("--isa {}: unknown; choose one of {}", o.isa, codegen::cpu::isa_names());
  }
  cpu.cc = codegen::cpu::host_compiler_options_for(cxx, cpu.isa);
  cpu.configs = o.configs;
  CompileReport report;
  if (!o.records.empty()) {
    if (!fs::exists(o.records)) user_error("--records {}: no such file", o.records);
    const tuner::RecordSet set = tuner::load_records(o.records);
    // Records time kernels of one ISA on this machine: a cross compile's kernels run elsewhere.
    const bool here = codegen::cpu::compiler_arch(cxx) == codegen::cpu::host_arch() &&
                      codegen::cpu::host_can_run(cpu.isa);
    const tuner::RecordQuery q{tuner::cpu_target(cpu.isa), o.model.batch, 0};
    for (const tuner::Record& r : set.records)
      report.records_applicable += here && r.target.same_hardware(q.target) ? 1 : 0;
    report.records_stale = set.stale;
    if (here) cpu.configs.merge(tuner::best_configs(set.records, q));
  }
  report.build = codegen::cpu::compile_cpu(g, cpu);
  const codegen::cpu::CpuBuild& b = report.build;
  if (!o.emit_source.empty()) {
    std::ofstream f(o.emit_source);
    if (!(f << b.source)) user_error("--emit-source: cannot write '{}'", o.emit_source);
  }

  artifact::Manifest m;
  m.tool_version = YOLOC_VERSION;
  if (o.outputs.empty()) m.family = std::string(detect::family_name(d.config.family));
  m.target = fmt::format("cpu-{}", codegen::cpu::isa_name(cpu.isa));
  m.precision = "fp32";
  for (const Value* v : g.inputs) m.inputs.push_back(spec_of(v));
  for (const Value* v : g.outputs) m.outputs.push_back(spec_of(v));
  m.class_names = d.names;
  m.preprocess = {{"kind", d.config.family == detect::Family::kYoloX ? "yolox" : "letterbox"},
                  {"height", d.config.input_h},
                  {"width", d.config.input_w}};
  m.postprocess = {{"conf", d.config.conf}, {"iou", d.config.iou}, {"max_det", d.config.max_det}};
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = runtime::program_to_json(b.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::cpu::kWeightsBlob, "weights", b.weights);
  w.add_blob(codegen::cpu::kKernelBlob, "kernel_so", b.kernels_so);
  if (!o.sign_key.empty()) w.sign_with_key_file(o.sign_key);
  w.write(o.output);

  std::error_code ec;
  report.artifact_bytes = fs::file_size(o.output, ec);
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

ImportedDetector import_for_cpu(const DetectorModelOptions& options,
                                const std::vector<std::string>& outputs) {
  ImportedDetector d = import_detector(options);
  if (!outputs.empty()) select_outputs(*d.graph, outputs, options.path);
  PassContext passes;
  passes.target = "cpu";
  passes.precision = Precision::kFp32;
  optimize(*d.graph, passes);
  return d;
}

PreparedArtifact::~PreparedArtifact() {
  if (temp_dir.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_dir, ec);
}

PreparedArtifact prepare_artifact(const std::string& model, int batch) {
  PreparedArtifact p;
  if (is_artifact_path(model)) {
    p.path = model;
    return p;
  }
  std::string tmpl = (fs::temp_directory_path() / "yoloc-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary folder like {}", tmpl);
  p.temp_dir = tmpl;
  CompileOptions c;
  c.model.path = model;
  c.model.batch = batch > 0 ? batch : 1;
  c.output = (fs::path(tmpl) / "model.ycm").string();
  p.compile_seconds = compile_model(c).seconds;
  p.path = c.output;
  return p;
}

}  // namespace yoloc::tools
