// The CPU target's compile: generated C++ kernels built by the host compiler into one shared
// object.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include "codegen/cpu/cpu_compiler.h"
#include "compiler/compile.h"
#include "tuner/records.h"

namespace yoloc::compiler {

CompileReport compile_for_cpu(const CompileJob& job) {
  namespace fs = std::filesystem;
  const CompileOptions& o = job.options;
  if (o.model.precision != "fp32" && o.model.precision != "auto")
    user_error("--precision {}: the cpu target computes in fp32 (quantized and fp16 models are "
               "compiled to fp32); pass --precision fp32",
               o.model.precision);
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
  ImportedDetector d = import_for_cpu(job.model, o.model, o.outputs);
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
  cpu.cache = o.no_cache ? nullptr : &codegen::BuildCache::user();
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
  m.precision = "fp32";
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = artifact::program_to_json(b.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::cpu::kWeightsBlob, "weights", b.weights);
  w.add_blob(codegen::cpu::kKernelBlob, "kernel_so", b.kernels_so);
  report.target = m.target;
  report_build(report, b.tasks, b.plan);
  report.tuned = b.tuned;
  report.weights_bytes = b.weights.size();
  report.kernel_bytes = b.kernels_so.size();
  report.builds = 1;
  report.cached_builds = b.from_cache ? 1 : 0;
  job.write_artifact(w, report);
  return report;
}

}  // namespace yoloc::compiler
