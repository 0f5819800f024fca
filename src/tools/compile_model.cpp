#include "tools/compile_model.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "artifact/artifact_writer.h"
#include "detect/family.h"
#include "passes/pipeline.h"
#include "tools/int8_accuracy.h"
#include "tuner/records.h"
#ifdef YOLOC_HAVE_CUDA
#include "codegen/cuda/cuda_compiler.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tasks.h"
#endif

namespace yoloc::tools {
namespace {

namespace fs = std::filesystem;

/// v's spec in an artifact whose batch is `lanes` copies of the graph's (a batch-first shape).
artifact::TensorSpec spec_of(const Value* v, int lanes = 1) {
  Shape shape = v->type.static_shape();
  if (!shape.empty()) shape[0] *= lanes;
  return {v->name, std::string(dtype_name(v->type.dtype)), shape};
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

namespace {

/// The manifest fields every target shares: the tool, the detector (family, classes, pre- and
/// post-processing) and the tensors.
/// `lanes`: the artifact runs that many copies of the graph (its batch) at once.
artifact::Manifest detector_manifest(const CompileOptions& o, const ImportedDetector& d,
                                     int lanes = 1) {
  const Graph& g = *d.graph;
  artifact::Manifest m;
  m.tool_version = YOLOC_VERSION;
  if (o.outputs.empty()) m.family = std::string(detect::family_name(d.config.family));
  for (const Value* v : g.inputs) m.inputs.push_back(spec_of(v, lanes));
  for (const Value* v : g.outputs) m.outputs.push_back(spec_of(v, lanes));
  m.class_names = d.names;
  m.preprocess = {{"kind", d.config.family == detect::Family::kYoloX ? "yolox" : "letterbox"},
                  {"height", d.config.input_h},
                  {"width", d.config.input_w}};
  m.postprocess = {{"conf", d.config.conf}, {"iou", d.config.iou}, {"max_det", d.config.max_det}};
  return m;
}

void write_artifact(const CompileOptions& o, artifact::ArtifactWriter& w, CompileReport& report,
                    std::chrono::steady_clock::time_point start) {
  if (!o.sign_key.empty()) w.sign_with_key_file(o.sign_key);
  w.write(o.output);
  std::error_code ec;
  report.artifact_bytes = fs::file_size(o.output, ec);
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_source(const CompileOptions& o, const std::string& source) {
  if (o.emit_source.empty()) return;
  std::ofstream f(o.emit_source);
  if (!(f << source)) user_error("--emit-source: cannot write '{}'", o.emit_source);
}

#ifdef YOLOC_HAVE_CUDA
CompileReport compile_for_cuda(const CompileOptions& o,
                               std::chrono::steady_clock::time_point start) {
  if (!o.cc.empty() || !o.isa.empty())
    user_error("--cc and --isa choose the CPU target's compiler and ISA; --target cuda takes "
               "--arch");
  const Precision precision = cuda_precision(o.model.precision);
  // The graph is one lane's: the kernels, their records and the memory plan are of its batch.
  const int lanes = cuda_lanes(o.model.lanes, o.model.batch);
  DetectorModelOptions lane_model = o.model;
  lane_model.batch = o.model.batch / lanes;
  ImportedDetector d = import_for_cuda(lane_model, precision, o.outputs);
  const Graph& g = *d.graph;
  codegen::cuda::CudaCompileOptions cuda;
  cuda.arch = o.arch.empty() ? "sm_90" : o.arch;
  cuda.configs = o.configs;
  cuda.cache = o.no_cache ? nullptr : &codegen::BuildCache::user();
  using B2bMode = codegen::cuda::B2bPolicy::Mode;
  cuda.b2b.mode = o.b2b == "on"    ? B2bMode::kAll
                  : o.b2b == "off" ? B2bMode::kOff
                                   : B2bMode::kMeasured;
  cuda.stem_pairs = o.stem_pair;
  cuda.reuse = o.memory_reuse == "sequential" ? Reuse::kSequential : Reuse::kOrdered;
  cuda.lanes = lanes;
  CompileReport report;
  const std::string records = o.no_records      ? std::string()
                              : o.records.empty() ? default_cuda_records(cuda.arch)
                                                  : o.records;
  if (!records.empty()) {
    if (!fs::exists(records)) user_error("--records {}: no such file", records);
    const tuner::RecordSet set = tuner::load_records(records);
    // The GPU compile runs on need not be the one that measured: records of the same arch
    // apply, whatever device model of that arch timed them (the fastest over all of them).
    tuner::RecordQuery q;
    q.target.kind = "cuda";
    q.target.arch = cuda.arch;
    q.batch = lane_model.batch;
    std::vector<tuner::Record> same_arch;
    for (const tuner::Record& r : set.records) {
      if (r.target.kind != "cuda" || r.target.arch != cuda.arch) continue;
      same_arch.push_back(r);
      same_arch.back().target = q.target;
    }
    report.records_applicable = static_cast<int>(same_arch.size());
    report.records_stale = set.stale;
    report.records_file = records;
    // Records made before a knob was added count as today's config (with the knob's absent
    // value): the spaces of every task the model may have, pairs fused or not.
    std::map<std::string, codegen::ScheduleSpace> spaces;
    for (const auto mode :
         {codegen::cuda::B2bPolicy::Mode::kAll, codegen::cuda::B2bPolicy::Mode::kOff}) {
      codegen::cuda::B2bPolicy all;
      all.mode = mode;
      for (const codegen::cuda::CudaTask& t : codegen::cuda::extract_cuda_tasks(
               g, codegen::cuda::parse_cuda_arch(cuda.arch), all, cuda.stem_pairs)) {
        spaces.emplace(t.key, t.space);
        // The twin's records are ranked too: a conv storing class scores or boxes may take its
        // config.
        if (!t.twin_key.empty()) spaces.emplace(t.twin_key, t.space);
      }
    }
    tuner::complete_configs(same_arch, spaces);
    const std::map<std::string, tuner::Record> best = tuner::best_records(same_arch, q);
    for (const auto& [key, r] : best) {
      cuda.configs.try_emplace(key, r.config);
      // The pairs and convs timed at this batch decide which pairs are fused (B2bPolicy).
      if (r.batch == q.batch) cuda.b2b.seconds.emplace(key, r.median);
    }
    // Conv tasks with no records of this batch take their workload's best config at the
    // nearest batch that has records (compile_cuda keeps it only where it is valid). The tasks
    // as compile_cuda extracts them, for the target's arch.
    std::set<std::string> keys;
    // The convs storing class scores or boxes, or reading an upsampled input.
    std::vector<codegen::cuda::CudaTask> twins;
    for (codegen::cuda::CudaTask& t : codegen::cuda::extract_cuda_tasks(
             g, codegen::cuda::parse_cuda_arch(cuda.arch), cuda.b2b, cuda.stem_pairs)) {
      keys.insert(t.key);
      if (const auto twin = codegen::cuda::nhwc_output_twin(t.key)) keys.insert(*twin);
      if (!t.twin_key.empty()) {
        keys.insert(t.twin_key);
        if (const auto twin = codegen::cuda::nhwc_output_twin(t.twin_key)) keys.insert(*twin);
        twins.push_back(std::move(t));
      }
    }
    for (const auto& [key, r] : tuner::nearest_batch_records(same_arch, q, keys))
      if (cuda.configs.try_emplace(key, r.config).second) report.nearest_batch.emplace(key, r.batch);
    // Convs writing NCHW or an upsampled copy without records take their NHWC twin's config.
    for (const std::string& key : keys) {
      const auto twin = codegen::cuda::nhwc_output_twin(key);
      if (!twin || cuda.configs.contains(key)) continue;
      if (auto it = cuda.configs.find(*twin); it != cuda.configs.end()) {
        cuda.configs.emplace(key, it->second);
        report.layout_twin.insert(key);
      }
    }
    // Convs storing class scores or boxes (or reading an upsampled input), that of the conv
    // storing its own output (reading its whole input: CudaTask::twin_key), with the other knob
    // where theirs needs it (twin_config).
    for (const codegen::cuda::CudaTask& t : twins) {
      const auto it = cuda.configs.find(t.twin_key);
      if (cuda.configs.contains(t.key) || it == cuda.configs.end()) continue;
      const auto cfg = codegen::twin_config(t.space, it->second, t.valid);
      if (!cfg) continue;
      cuda.configs.emplace(t.key, *cfg);
      report.layout_twin.insert(t.key);
    }
  }
  if (o.outputs.empty() && g.inputs.size() == 1 && !g.outputs.empty() &&
      g.outputs[0]->type.dims.size() == 3) {
    codegen::cuda::DetectKernelConfig dc;
    dc.family = d.config.family;
    dc.input_w = d.config.input_w;
    dc.input_h = d.config.input_h;
    dc.input_dtype = g.inputs[0]->type.dtype;
    dc.input_strides = codegen::cuda::nchw_strides(d.config.input_w, d.config.input_h);
    const Shape head = g.outputs[0]->type.static_shape();
    dc.head_shape = {head[0] * lanes, head[1], head[2]};
    dc.head_dtype = g.outputs[0]->type.dtype;
    dc.max_det_cap = std::clamp(d.config.max_det, 1, 1000);
    cuda.detect = dc;
  }
  codegen::cuda::CudaBuild b = codegen::cuda::compile_cuda(g, cuda);
  write_source(o, b.source);
  artifact::Manifest m = detector_manifest(o, d, lanes);
  m.target = "cuda-" + cuda.arch;
  m.precision = precision == Precision::kFp16 ? "fp16" : precision == Precision::kBf16 ? "bf16" : "fp32";
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = runtime::cuda::cuda_program_to_json(b.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::cuda::kCudaWeightsBlob, "weights", b.weights);
  for (size_t i = 0; i < b.modules.size(); ++i) {
    w.add_blob(codegen::cuda::cuda_module_blob(i), "cubin", b.modules[i]);
    report.kernel_bytes += b.modules[i].size();
  }
  report.target = m.target;
  report.lanes = lanes;
  report.arena_bytes = b.program.arena_bytes;
  report.tasks = std::move(b.tasks);
  report.tuned = b.tuned;
  report.plan = std::move(b.plan);
  report.weights_bytes = b.weights.size();
  report.backend_seconds = b.nvrtc_seconds;
  report.builds = static_cast<int>(b.modules.size());
  report.cached_builds = b.cached_modules;
  write_artifact(o, w, report, start);
  return report;
}
#endif

CompileReport compile_for_cpu(const CompileOptions& o,
                              std::chrono::steady_clock::time_point start) {
  const bool int8 = o.model.precision == "int8";
  if (o.model.precision != "fp32" && o.model.precision != "auto" && !int8)
    user_error("--precision {}: the cpu target computes in fp32 (quantized and fp16 models are "
               "compiled to fp32) or int8 (with --calibration); pass --precision fp32 or int8",
               o.model.precision);
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
    const AccuracyAwareInt8 search(o);
    return compile_for_cpu(search.options(), start);
  }
  const std::optional<Int8Plan> plan =
      int8 ? std::optional<Int8Plan>(int8_plan(o.model, o.int8)) : std::nullopt;
  ImportedDetector d = import_for_cpu(o.model, o.outputs, plan ? &*plan : nullptr);
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
  write_source(o, b.source);
  artifact::Manifest m = detector_manifest(o, d);
  m.target = fmt::format("cpu-{}", codegen::cpu::isa_name(cpu.isa));
  // No int8 CPU kernels yet: the quantized convs run as fake-quant on the fp32 kernels.
  m.precision = int8 ? "int8-fakequant" : "fp32";
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = runtime::program_to_json(b.program);
  report.int8_convs = plan ? static_cast<int>(plan->convs.size()) : 0;
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::cpu::kWeightsBlob, "weights", b.weights);
  w.add_blob(codegen::cpu::kKernelBlob, "kernel_so", b.kernels_so);
  report.target = m.target;
  report.tasks = std::move(b.tasks);
  report.tuned = b.tuned;
  report.plan = std::move(b.plan);
  report.weights_bytes = b.weights.size();
  report.kernel_bytes = b.kernels_so.size();
  report.builds = 1;
  report.cached_builds = b.from_cache ? 1 : 0;
  write_artifact(o, w, report, start);
  return report;
}

}  // namespace

CompileReport compile_model(const CompileOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  check_output(o);
  if (o.target == "cpu") return compile_for_cpu(o, start);
  if (o.target == "cuda") {
#ifdef YOLOC_HAVE_CUDA
    return compile_for_cuda(o, start);
#else
    user_error("--target cuda: this yoloc was built without the CUDA toolkit (NVRTC)");
#endif
  }
  user_error("--target {}: choose cpu or cuda", o.target);
}

int cuda_lanes(const std::string& option, int batch) {
  if (option.empty()) return 1;
  int lanes = 0;
  const auto [end, ec] = std::from_chars(option.data(), option.data() + option.size(), lanes);
  if (ec != std::errc() || end != option.data() + option.size() || lanes < 1)
    user_error("--lanes {}: expected a number of lanes (1, 2, ...)", option);
  if (batch % lanes != 0)
    user_error(
        "--lanes {}: the batch ({}) must split into {} equal lanes; choose a number "
        "that divides it",
        option, batch, lanes);
  return lanes;
}

std::string default_cuda_records(const std::string& arch) {
  const std::string name = "cuda-" + arch + ".jsonl";
  std::vector<fs::path> places;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    places.push_back(exe.parent_path().parent_path() / "share" / "yoloc" / "records" / name);
    places.push_back(exe.parent_path() / "share" / "yoloc" / "records" / name);
  }
#ifdef YOLOC_SOURCE_DIR
  places.push_back(fs::path(YOLOC_SOURCE_DIR) / "records" / name);
#endif
  for (const fs::path& p : places)
    if (fs::is_regular_file(p, ec)) return p.string();
  return "";
}

Precision cuda_precision(const std::string& name) {
  if (name == "fp16" || name == "auto") return Precision::kFp16;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp32") return Precision::kFp32;
  user_error("--precision {}: the cuda target computes in fp32, fp16 or bf16", name);
}

bool narrow_io(const std::string& io_precision, Precision precision) {
  if (io_precision.empty() || io_precision == "fp32") return false;
  const Precision io = io_precision == "fp16"   ? Precision::kFp16
                       : io_precision == "bf16" ? Precision::kBf16
                                                : Precision::kAuto;
  if (io == Precision::kAuto)
    user_error("--io-precision {}: choose fp32 (the default), fp16 or bf16", io_precision);
  if (io != precision)
    user_error(
        "--io-precision {}: narrow inputs and outputs take the type the network computes in; "
        "pass --precision {} as well, or leave --io-precision out",
        io_precision, io_precision);
  return true;
}

ImportedDetector import_for_cuda(const DetectorModelOptions& options, Precision precision,
                                 const std::vector<std::string>& outputs) {
  ImportedDetector d = import_detector(options);
  if (!outputs.empty()) select_outputs(*d.graph, outputs, options.path);
  PassContext passes;
  passes.target = "cuda";
  passes.precision = precision;
  passes.narrow_io = narrow_io(options.io_precision, precision);
  optimize(*d.graph, passes);
  return d;
}

ImportedDetector import_for_cpu(const DetectorModelOptions& options,
                                const std::vector<std::string>& outputs, const Int8Plan* int8) {
  ImportedDetector d = import_detector(options);
  if (!outputs.empty()) select_outputs(*d.graph, outputs, options.path);
  PassContext passes;
  passes.target = "cpu";
  passes.precision = Precision::kFp32;
  passes.int8 = int8;
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
