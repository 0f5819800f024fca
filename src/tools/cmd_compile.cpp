// yoloc compile MODEL.onnx [--target cpu|cuda] [--arch sm_90] [--precision fp32|fp16|bf16]
//               [--io-precision fp32|fp16|bf16]
//               [--batch N] [--imgsz N] [--family F] [--cc CXX] [--isa ISA] [--sign KEY]
//               [--records FILE | --no-records] [--no-cache] [--b2b measured|on|off] [--stem-pair]
//               [--memory-reuse ordered|sequential] [--force] -o OUT.ycm
//               [--precision int8 --calibration DIR | --calibration-file CALIB.json
//                [--calibration-images N] [--calibration-method M] [--int8-skip PATTERN...]]
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "tools/commands.h"
#include "tools/int8_options.h"
#include "tools/detector_model.h"
#include "yoloc/compiler.h"

namespace yoloc::tools {

namespace {

void print_report(const std::string& model, const CompileOptions& o, const CompileReport& r) {
  std::map<std::string, int> by_template;
  for (const CompiledKernel& t : r.kernels) ++by_template[t.template_name];
  std::string kinds;
  for (const auto& [name, n] : by_template) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, name);
  const double mb = 1e6;
  const std::string cached =
      r.cached_builds == 0        ? ""
      : r.builds == 1             ? ", from the kernel build cache"
      : r.cached_builds == r.builds ? fmt::format(", all {} from the kernel build cache", r.builds)
                                    : fmt::format(", {} of {} from the kernel build cache",
                                                  r.cached_builds, r.builds);
  fmt::print("compiled {} -> {} ({:.1f} MB, {}) in {:.1f} s ({:.1f} s building kernels{})\n",
             model, o.output, static_cast<double>(r.artifact_bytes) / mb, r.target,
             r.seconds, r.backend_seconds, cached);
  fmt::print("  kernels: {} ({}); {} tuned, {} heuristic defaults\n", r.kernels.size(), kinds,
             r.tuned, r.kernels.size() - static_cast<size_t>(r.tuned));
  const auto pairs = std::count_if(r.kernels.begin(), r.kernels.end(), [](const auto& t) {
    return t.key.find(" b2b k2=") != std::string::npos;
  });
  if (pairs > 0)
    fmt::print("  back-to-back pairs: {} fused (--b2b {})\n", pairs,
               o.b2b.empty() ? "measured" : o.b2b);
  const std::string& records = r.records_file.empty() ? o.records : r.records_file;
  if (!records.empty()) {
    std::set<std::string> workloads, tuned;
    std::map<int64_t, int> from_batch;  // tuned workloads by the other batch their records had
    int twins = 0;  // tuned workloads (NCHW out, upsampled copy) with their NHWC form's config
    for (const CompiledKernel& t : r.kernels) {
      workloads.insert(t.key);
      if (!t.tuned || !tuned.insert(t.key).second) continue;
      if (auto it = r.nearest_batch.find(t.key); it != r.nearest_batch.end())
        ++from_batch[it->second];
      twins += r.layout_twin.contains(t.key) ? 1 : 0;
    }
    std::string from;
    for (const auto& [batch, n] : from_batch)
      from += fmt::format("{}{} from records of batch {}", from.empty() ? "" : ", ", n, batch);
    if (twins > 0)
      from +=
          fmt::format("{}{} from the records of their twin (NHWC output, own output, whole input)",
                      from.empty() ? "" : ", ", twins);
    fmt::print("  records {}: {} for this {} ({} of other versions ignored); {} tasks tuned{}, "
               "{} defaults\n",
               records, r.records_applicable, o.target == "cuda" ? "arch" : "machine",
               r.records_stale, tuned.size(), from.empty() ? "" : " (" + from + ")",
               workloads.size() - tuned.size());
  }
  fmt::print("  arena: {:.2f} MB (naive sum of intermediates {:.2f} MB, {:.1f} %)\n",
             static_cast<double>(r.arena_bytes) / mb,
             static_cast<double>(r.naive_arena_bytes) / mb,
             100.0 * static_cast<double>(r.arena_bytes) /
                 static_cast<double>(std::max<uint64_t>(r.naive_arena_bytes, 1)));
  if (r.lanes > 1)
    fmt::print(
        "  lanes: {} of batch {} at once, each with its own arena (device buffer {:.2f} "
        "MB)\n",
        r.lanes, o.model.batch / r.lanes, static_cast<double>(r.device_buffer_bytes) / mb);
  if (r.int8_convs > 0)
    fmt::print("  int8: {} convs quantized; the {} target has no int8 kernels yet: they run on its "
               "fp32 kernels with int8-rounded weights and activations (fake-quant)\n",
               r.int8_convs, o.target);
  fmt::print("  weights {:.2f} MB, kernels {:.2f} MB\n", static_cast<double>(r.weights_bytes) / mb,
             static_cast<double>(r.kernel_bytes) / mb);
}

}  // namespace

void add_compile(CLI::App& app) {
  struct Cli {
    DetectorModelOptions model;
    CompileOptions compile;
  };
  auto cli = std::make_shared<Cli>();
  CompileOptions* o = &cli->compile;
  auto* c = app.add_subcommand("compile", "Compile an ONNX detector into a .ycm artifact");
  add_detector_model_options(*c, cli->model);
  add_io_precision_option(*c, cli->model);
  c->get_option("model")->description("ONNX model to compile (.onnx)");
  c->get_option("--precision")
      ->description(
          "the numerics: auto (the target's default: cpu fp32, cuda fp16), fp32, or on cuda "
          "fp16 or bf16");
  c->add_option("-o,--output", o->output, "the artifact to write (.ycm)")->required();
  c->add_option("--target", o->target, "what to compile for: cpu, or cuda (NVIDIA GPUs)")
      ->capture_default_str();
  c->add_option("--arch", o->arch,
                "cuda: the GPU architecture of the kernels (sm_80, sm_86, sm_89, sm_90, ...; "
                "default sm_90)");
  c->add_option("--batch", cli->model.batch, "images per run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--cc", o->cc,
                "C++ compiler for the kernels (cross compilation, e.g. aarch64-linux-gnu-g++); "
                "default: the host's c++");
  c->add_option("--isa", o->isa,
                 "vector ISA of the kernels: avx512, avx2, neon, generic (default: the best the "
                 "compiler's target has: this CPU's, neon for aarch64)");
  c->add_option("--sign", o->sign_key,
                "sign the artifact with this Ed25519 secret key file (yoloc keygen NAME writes "
                "NAME.key); kernels are then built afresh, never taken from the build cache");
  c->add_option("--emit-source", o->emit_source, "also write the generated kernel C++ to FILE");
  c->add_option("--outputs", o->outputs,
                 "compile these values as the outputs instead (debugging; no detector then)");
  c->add_option("--records", o->records,
                "apply the best tuning record of each task from FILE (yoloc tune's records; only "
                "records of this machine, ISA and tool version are used; cuda: of this --arch, "
                "default: the shipped records/cuda-<arch>.jsonl if there is one)");
  c->add_flag("--no-records", o->no_records,
              "apply no tuning records, not even the shipped ones (the heuristic defaults)")
      ->excludes(c->get_option("--records"));
  c->add_flag("--no-cache", o->no_cache,
              "build every kernel: neither read nor fill the kernel build cache "
              "($YOLOC_CACHE_DIR, else ~/.cache/yoloc/kernels; YOLOC_CACHE_DIR=off turns it off)");
  c->add_option("--b2b", o->b2b,
                "cuda: which back-to-back pairs (a conv and the 1x1 conv alone reading it) run "
                "as one kernel: 'measured' (default: those the tuning records timed faster than "
                "their two kernels at this batch), 'on' (all) or 'off'")
      ->check(CLI::IsMember({"measured", "on", "off"}));
  c->add_flag("--stem-pair", o->stem_pair,
              "cuda: run the first two convs (the stem) as one kernel that keeps the first's "
              "output on chip (not yet faster on an H200, so off by default)");
  c->add_option("--memory-reuse", o->memory_reuse,
                "cuda: how activations reuse dead bytes of the arena: 'ordered' (default: only "
                "after every kernel that touched them, by the data; independent branches run at "
                "once on the runtime's streams) or 'sequential' (the smallest arena, about 60 % "
                "of it; branches then wait for each other)")
      ->check(CLI::IsMember({"ordered", "sequential"}));
  add_lanes_option(*c, cli->model);
  add_int8_options(*c, o->int8, /*compile=*/true);
  c->add_flag("--force", o->force, "overwrite the output file if it exists");
  c->callback([cli] {
    cli->compile.model = cli->model;
    const CompileReport r = compile(cli->model.path, cli->compile);
    print_report(cli->model.path, cli->compile, r);
  });
}

}  // namespace yoloc::tools
