// The OpenCL target (YOLOC_OPENCL): kernels emitted as OpenCL C 1.2 source into the artifact
// (portable across devices; the runtime builds it for the device at load and caches the
// binary), run by the runtime's OpenCL executor; pre- and post-processing on the host.
#include <chrono>
#include <utility>

#include "codegen/opencl/opencl_compiler.h"
#include "passes/pipeline.h"
#include "targets/opencl/opencl_attributes.h"
#include "targets/target.h"

namespace yoloc::targets {
namespace {

using compiler::CompileJob;
using compiler::ImportedDetector;

void check_precision(const ModelOptions& model) {
  if (model.precision != "fp32" && model.precision != "auto")
    user_error("--precision {}: the opencl target computes and stores fp32 (quantized and fp16 "
               "models are compiled to fp32); pass --precision fp32",
               model.precision);
}

class OpenClTarget : public Target {
 public:
  std::string name() const override { return "opencl"; }
  TargetAttributes attributes(const std::string& variant) const override {
    if (!variant.empty())
      user_error("target opencl-{}: the opencl target has no variants; the device is chosen "
                 "when the artifact runs",
                 variant);
    return opencl_attributes();
  }
  ImportedDetector import_model(const std::string& path, const ModelOptions& model,
                                const std::vector<std::string>& outputs) const override {
    check_precision(model);
    ImportedDetector d = compiler::import_detector(path, model);
    if (!outputs.empty()) compiler::select_outputs(*d.graph, outputs, path);
    PassContext passes;
    passes.target = opencl_attributes();
    passes.precision = Precision::kFp32;
    optimize(*d.graph, passes);
    return d;
  }
  CompileReport compile(const CompileJob& job) const override;
  int lanes(const ModelOptions& model) const override {
    if (!model.lanes.empty()) user_error("--lanes {}: lanes are for --target cuda", model.lanes);
    return 1;
  }
  TuneSetup tuning(const Graph& g, const TuneRequest& request) const override {
    user_error("yoloc tune --target opencl: the tuner has no OpenCL measurer yet; compile with "
               "the templates' defaults (yoloc compile --target opencl)");
  }
  std::unique_ptr<tuner::Measurer> make_measurer(const tuner::MeasureOptions& options,
                                                 const tuner::TuneTarget& target,
                                                 const std::vector<int>& devices) const override {
    user_error("the tuner has no OpenCL measurer yet");
  }
  std::string executor() const override { return "opencl"; }
};

const TargetRegistration<OpenClTarget> registration;

CompileReport OpenClTarget::compile(const CompileJob& job) const {
  const CompileOptions& o = job.options;
  check_precision(o.model);
  for (const auto& [given, option] :
       {std::pair{!o.arch.empty(), "--arch"},
        {!o.isa.empty(), "--isa"},
        {!o.cc.empty(), "--cc"},
        {!o.b2b.empty(), "--b2b"},
        {!o.model.io_precision.empty() && o.model.io_precision != "fp32", "--io-precision"},
        {o.stem_pair, "--stem-pair"},
        {!o.memory_reuse.empty(), "--memory-reuse"},
        {!o.model.lanes.empty(), "--lanes"}}) {
    if (given)
      user_error("{} is not an option of --target opencl (OpenCL C source built for the device "
                 "at load); leave it out",
                 option);
  }
  ImportedDetector d = import_model(job.model, o.model, o.outputs);
  CompileReport report;
  if (!o.records.empty())
    user_error("--records {}: the tuner has no OpenCL measurer yet, so no record applies to "
               "--target opencl; leave it out",
               o.records);
  const auto t0 = std::chrono::steady_clock::now();
  codegen::opencl::OpenClBuild b = codegen::opencl::compile_opencl(*d.graph, job.configs);
  report.backend_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  job.write_source(b.source);
  artifact::Manifest m = job.detector_manifest(d);
  m.target = "opencl";
  m.precision = "fp32";
  m.memory_plan = memory_plan_to_json(b.plan);
  m.program = artifact::program_to_json(b.program);
  artifact::ArtifactWriter w(m);
  w.add_blob(codegen::opencl::kWeightsBlob, "weights", b.weights);
  w.add_blob(codegen::opencl::kSourceBlob, "kernel_source", b.source);
  report.target = m.target;
  compiler::report_build(report, b.tasks, b.plan);
  report.tuned = b.tuned;
  report.weights_bytes = b.weights.size();
  report.kernel_bytes = b.source.size();
  report.builds = 0;  // the device builds the source when the artifact loads
  job.write_artifact(w, report);
  return report;
}

}  // namespace
}  // namespace yoloc::targets
