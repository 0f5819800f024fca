// The CPU target: generated C++ kernels (codegen/cpu: AVX-512, AVX2, NEON or plain vectors)
// built by the host compiler into one shared object, run by the runtime's thread-pool executor.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>

#include "codegen/cpu/cpu_compiler.h"
#include "compiler/int8_accuracy.h"
#include "compiler/int8_calibration.h"
#include "passes/pipeline.h"
#include "targets/cpu/cpu_attributes.h"
#include "targets/target.h"
#include "tuner/cpu_tasks.h"
#include "tuner/records.h"

namespace yoloc::targets {
namespace {

using compiler::CompileJob;
using compiler::ImportedDetector;

class CpuTarget : public Target {
 public:
  std::string name() const override { return "cpu"; }
  TargetAttributes attributes(const std::string& variant) const override {
    return cpu_attributes(variant);
  }
  ImportedDetector import_model(const std::string& path, const ModelOptions& model,
                                const std::vector<std::string>& outputs) const override;
  CompileReport compile(const CompileJob& job) const override;
  int lanes(const ModelOptions& model) const override {
    if (!model.lanes.empty()) user_error("--lanes {}: lanes are for --target cuda", model.lanes);
    return 1;
  }
  TuneSetup tuning(const Graph& g, const TuneRequest& request) const override;
  std::unique_ptr<tuner::Measurer> make_measurer(const tuner::MeasureOptions& options,
                                                 const tuner::TuneTarget& target,
                                                 const std::vector<int>& devices) const override {
    return tuner::make_cpu_measurer(options);
  }
  std::string executor() const override { return "cpu"; }
};

const TargetRegistration<CpuTarget> registration;

/// The ISA of --isa (empty: the host's).
codegen::cpu::CpuIsa isa_option(const std::string& isa) {
  if (isa.empty()) return codegen::cpu::detect_host_isa();
  const auto parsed = codegen::cpu::parse_isa(isa);
  if (!parsed) user_error("--isa {}: unknown; choose one of {}", isa, codegen::cpu::isa_names());
  return *parsed;
}

void check_precision(const ModelOptions& model, bool int8_allowed) {
  const bool int8 = int8_allowed && model.precision == "int8";
  if (model.precision != "fp32" && model.precision != "auto" && !int8)
    user_error("--precision {}: the cpu target computes in fp32 (quantized and fp16 models are "
               "compiled to fp32) or int8 (with --calibration); pass --precision fp32 or int8",
               model.precision);
}

/// The detector imported and optimized for the cpu in fp32, its convs of `int8` quantized.
ImportedDetector import_cpu(const TargetAttributes& target, const std::string& path,
                            const ModelOptions& model, const std::vector<std::string>& outputs,
                            const Int8Plan* int8) {
  ImportedDetector d = compiler::import_detector(path, model);
  if (!outputs.empty()) compiler::select_outputs(*d.graph, outputs, path);
  PassContext passes;
  passes.target = target;
  passes.precision = Precision::kFp32;
  passes.int8 = int8;
  optimize(*d.graph, passes);
  return d;
}

ImportedDetector CpuTarget::import_model(const std::string& path, const ModelOptions& model,
                                         const std::vector<std::string>& outputs) const {
  check_precision(model, /*int8_allowed=*/false);
  return import_cpu(attributes(""), path, model, outputs, nullptr);
}

TuneSetup CpuTarget::tuning(const Graph& g, const TuneRequest& request) const {
  const codegen::cpu::CpuIsa isa = isa_option(request.isa);
  TuneSetup s;
  s.target = tuner::resolve_target("cpu", request.devices.empty() ? 0 : request.devices[0], isa);
  s.tasks = tuner::tuning_tasks(g, isa);
  return s;
}

CompileReport CpuTarget::compile(const CompileJob& job) const {
  namespace fs = std::filesystem;
  const CompileOptions& o = job.options;
  check_precision(o.model, /*int8_allowed=*/true);
  const bool int8 = o.model.precision == "int8";
  if (!int8 && (o.int8.any() || o.int8.no_bias_correction))
    user_error("--calibration, --calibration-file, --calibration-method and --int8-skip are for "
               "--precision int8; add it or leave them out");
  if (!o.arch.empty()) user_error("--arch {}: --arch is for --target cuda", o.arch);
  for (const auto& [given, option] :
       {std::pair{!o.b2b.empty(), "--b2b"},
        {!o.model.io_precision.empty() && o.model.io_precision != "fp32", "--io-precision"},
        {o.stem_pair, "--stem-pair"},
        {!o.memory_reuse.empty(), "--memory-reuse"},
        {!o.model.lanes.empty(), "--lanes"}}) {
    if (given)
      user_error(
          "{} is for --target cuda (CUDA kernels and memory plan); leave it out for the "
          "cpu target",
          option);
  }
  if (int8 && o.int8.max_map_drop > 0) {
    const compiler::AccuracyAwareInt8 search(job.model, o);
    return compile({job.model, search.options(), job.configs, job.start});
  }
  const std::optional<Int8Plan> plan =
      int8 ? std::optional<Int8Plan>(compiler::int8_plan(job.model, o.model, o.int8))
           : std::nullopt;
  ImportedDetector d = import_cpu(attributes(""), job.model, o.model, o.outputs,
                                  plan ? &*plan : nullptr);
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
  cpu.configs = job.configs;
  cpu.cache = compiler::kernel_cache(o);
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
  const auto t0 = std::chrono::steady_clock::now();
  codegen::cpu::CpuBuild b = codegen::cpu::compile_cpu(g, cpu);
  report.backend_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  job.write_source(b.source);
  artifact::Manifest m = job.detector_manifest(d);
  m.target = fmt::format("cpu-{}", codegen::cpu::isa_name(cpu.isa));
  // No int8 CPU kernels yet: the quantized convs run as fake-quant on the fp32 kernels.
  m.precision = int8 ? "int8-fakequant" : "fp32";
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = artifact::program_to_json(b.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::cpu::kWeightsBlob, "weights", b.weights);
  w.add_blob(codegen::cpu::kKernelBlob, "kernel_so", b.kernels_so);
  report.target = m.target;
  report.int8_convs = plan ? static_cast<int>(plan->convs.size()) : 0;
  compiler::report_build(report, b.tasks, b.plan);
  report.tuned = b.tuned;
  report.weights_bytes = b.weights.size();
  report.kernel_bytes = b.kernels_so.size();
  report.builds = 1;
  report.cached_builds = b.from_cache ? 1 : 0;
  job.write_artifact(w, report);
  return report;
}

}  // namespace
}  // namespace yoloc::targets
