// The CUDA target (built with the CUDA toolkit: YOLOC_CUDA): kernels built by NVRTC into
// cubins, one module per task, with the tuning records of the arch (shipped or given) applied;
// run by the runtime's CUDA executor, a detector's pre- and post-processing on the GPU too.
#include <algorithm>
#include <filesystem>
#include <set>

#include "codegen/cuda/cuda_compiler.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tasks.h"
#include "passes/pipeline.h"
#include "targets/cuda/cuda_attributes.h"
#include "targets/cuda/cuda_options.h"
#include "targets/target.h"
#include "tuner/cuda/cuda_tuning.h"
#include "tuner/records.h"

namespace yoloc::targets {
namespace {

namespace fs = std::filesystem;

using compiler::CompileJob;
using compiler::ImportedDetector;

class CudaTarget : public Target {
 public:
  std::string name() const override { return "cuda"; }
  TargetAttributes attributes(const std::string& variant) const override {
    if (!variant.empty())
      user_error("target cuda-{}: the cuda target has no variants; its --arch chooses the GPU",
                 variant);
    return cuda_attributes();
  }
  ImportedDetector import_model(const std::string& path, const ModelOptions& model,
                                const std::vector<std::string>& outputs) const override {
    return import_for_cuda(path, model, cuda_precision(model.precision), outputs);
  }
  CompileReport compile(const CompileJob& job) const override;
  int lanes(const ModelOptions& model) const override {
    return cuda_lanes(model.lanes, model.batch);
  }
  TuneSetup tuning(const Graph& g, const TuneRequest& request) const override;
  std::unique_ptr<tuner::Measurer> make_measurer(const tuner::MeasureOptions& options,
                                                 const tuner::TuneTarget& target,
                                                 const std::vector<int>& devices) const override {
    return tuner::make_cuda_measurer(options, target.arch, devices);
  }
  std::string executor() const override { return "cuda"; }
};

const TargetRegistration<CudaTarget> registration;

TuneSetup CudaTarget::tuning(const Graph& g, const TuneRequest& request) const {
  if (!request.isa.empty()) user_error("--isa {}: --isa is for --target cpu", request.isa);
  const std::string arch = request.arch.empty() ? "sm_90" : request.arch;
  TuneSetup s;
  s.tasks = tuner::cuda_tuning_tasks(g, codegen::cuda::parse_cuda_arch(arch));
  // --list-tasks needs no GPU; measuring asks the device (in a child process: this one never
  // initialises CUDA, so that the measurement workers it forks can).
  if (request.list_only) {
    s.target.kind = "cuda";
    s.target.arch = arch;
  } else {
    s.target = tuner::cuda_target(request.devices, arch);
  }
  return s;
}

CompileReport CudaTarget::compile(const CompileJob& job) const {
  const CompileOptions& o = job.options;
  if (!o.cc.empty() || !o.isa.empty())
    user_error("--cc and --isa choose the CPU target's compiler and ISA; --target cuda takes "
               "--arch");
  const Precision precision = cuda_precision(o.model.precision);
  // The graph is one lane's: the kernels, their records and the memory plan are of its batch.
  const int lanes = cuda_lanes(o.model.lanes, o.model.batch);
  ModelOptions lane_model = o.model;
  lane_model.batch = o.model.batch / lanes;
  ImportedDetector d = import_for_cuda(job.model, lane_model, precision, o.outputs);
  const Graph& g = *d.graph;
  codegen::cuda::CudaCompileOptions cuda;
  cuda.arch = o.arch.empty() ? "sm_90" : o.arch;
  cuda.configs = job.configs;
  cuda.cache = compiler::kernel_cache(o);
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
  job.write_source(b.source);
  artifact::Manifest m = job.detector_manifest(d, lanes);
  m.target = "cuda-" + cuda.arch;
  m.precision = precision == Precision::kFp16 ? "fp16" : precision == Precision::kBf16 ? "bf16" : "fp32";
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = artifact::cuda::cuda_program_to_json(b.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::cuda::kCudaWeightsBlob, "weights", b.weights);
  for (size_t i = 0; i < b.modules.size(); ++i) {
    w.add_blob(codegen::cuda::cuda_module_blob(i), "cubin", b.modules[i]);
    report.kernel_bytes += b.modules[i].size();
  }
  report.target = m.target;
  report.lanes = lanes;
  report.device_buffer_bytes = b.program.arena_bytes;
  compiler::report_build(report, b.tasks, b.plan);
  report.tuned = b.tuned;
  report.weights_bytes = b.weights.size();
  report.backend_seconds = b.nvrtc_seconds;
  report.builds = static_cast<int>(b.modules.size());
  report.cached_builds = b.cached_modules;
  job.write_artifact(w, report);
  return report;
}

}  // namespace
}  // namespace yoloc::targets
