// yoloc compile MODEL.onnx --target cpu [--batch N] [--imgsz N] [--family F] [--cc CXX]
//               [--precision fp32] [--sign KEY] [--records FILE] [--force] -o OUT.ycm
#include <fmt/format.h>

#include <map>
#include <set>

#include "tools/commands.h"
#include "tools/compile_model.h"

namespace yoloc::tools {

namespace {

void print_report(const CompileOptions& o, const CompileReport& r) {
  const codegen::cpu::CpuBuild& b = r.build;
  std::map<std::string, int> by_template;
  for (const codegen::cpu::CompiledTask& t : b.tasks) ++by_template[t.template_name];
  std::string kinds;
  for (const auto& [name, n] : by_template) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, name);
  const double mb = 1e6;
  fmt::print("compiled {} -> {} ({:.1f} MB) in {:.1f} s\n", o.model.path, o.output,
             static_cast<double>(r.artifact_bytes) / mb, r.seconds);
  fmt::print("  kernels: {} ({}); {} tuned, {} heuristic defaults\n", b.tasks.size(), kinds,
             b.tuned, b.tasks.size() - static_cast<size_t>(b.tuned));
  if (!o.records.empty()) {
    std::set<std::string> workloads, tuned;
    for (const codegen::cpu::CompiledTask& t : b.tasks) {
      workloads.insert(t.key);
      if (t.tuned) tuned.insert(t.key);
    }
    fmt::print("  records {}: {} for this machine ({} of other versions ignored); {} tasks tuned, "
               "{} defaults\n",
               o.records, r.records_applicable, r.records_stale, tuned.size(),
               workloads.size() - tuned.size());
  }
  fmt::print("  arena: {:.2f} MB (naive sum of intermediates {:.2f} MB, {:.1f} %)\n",
             static_cast<double>(b.plan.arena_bytes) / mb,
             static_cast<double>(b.plan.naive_bytes) / mb,
             100.0 * static_cast<double>(b.plan.arena_bytes) /
                 static_cast<double>(std::max<uint64_t>(b.plan.naive_bytes, 1)));
  fmt::print("  weights {:.2f} MB, kernels {:.2f} MB\n", static_cast<double>(b.weights.size()) / mb,
             static_cast<double>(b.kernels_so.size()) / mb);
}

}  // namespace

void add_compile(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  auto* c = app.add_subcommand("compile", "Compile an ONNX detector into a .ycm artifact");
  add_detector_model_options(*c, o->model);
  c->add_option("-o,--output", o->output, "the artifact to write (.ycm)")->required();
  c->add_option("--target", o->target, "what to compile for: cpu")->capture_default_str();
  c->add_option("--batch", o->model.batch, "images per run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--cc", o->cc,
                "C++ compiler for the kernels (cross compilation, e.g. aarch64-linux-gnu-g++); "
                "default: the host's c++");
  c->add_option("--isa", o->isa,
                 "vector ISA of the kernels: avx512, avx2, neon, generic (default: the best the "
                 "compiler's target has: this CPU's, neon for aarch64)");
  c->add_option("--sign", o->sign_key, "sign the artifact with this Ed25519 secret key file");
  c->add_option("--emit-source", o->emit_source, "also write the generated kernel C++ to FILE");
  c->add_option("--outputs", o->outputs,
                 "compile these values as the outputs instead (debugging; no detector then)");
  c->add_option("--records", o->records,
                "apply the best tuning record of each task from FILE (yoloc tune's records; only "
                "records of this machine, ISA and tool version are used)");
  c->add_flag("--force", o->force, "overwrite the output file if it exists");
  c->callback([o] {
    const CompileReport r = compile_model(*o);
    print_report(*o, r);
  });
}

}  // namespace yoloc::tools
