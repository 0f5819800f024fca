#pragma once
/// The compile driver behind yoloc::compile (yoloc/compiler.h): import -> optimize for the
/// target -> lower into tasks with their configs (tuning records applied) -> build the kernels
/// -> write the artifact. What the tools add to the public call: configs chosen by the caller
/// (the tuner's in-model timings), and the graph a target compiles (for `yoloc tune`).
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "artifact/artifact_writer.h"
#include "codegen/cpu/cpu_compiler.h"
#include "codegen/cpu/schedule.h"
#include "codegen/memory_plan.h"
#include "compiler/detector_import.h"
#include "passes/pass.h"
#include "yoloc/compiler.h"

namespace yoloc::compiler {

/// Schedule configs by workload key.
using Configs = std::map<std::string, codegen::ScheduleConfig>;

/// yoloc::compile with `configs` applied first: tasks with one take it; the others take the
/// records' (options.records) or their default.
CompileReport compile(const std::string& model, const CompileOptions& options,
                      const Configs& configs);

/// One compile in progress: what every target's driver reads, and the pieces they share.
struct CompileJob {
  const std::string& model;  ///< the ONNX file
  const CompileOptions& options;
  const Configs& configs;
  std::chrono::steady_clock::time_point start;

  /// The manifest fields every target shares: the tool, the detector (family, classes, pre-
  /// and post-processing) and the tensors; `lanes`: the artifact runs that many copies of the
  /// graph (its batch) at once.
  artifact::Manifest detector_manifest(const ImportedDetector& d, int lanes = 1) const;
  /// Writes options.emit_source when asked.
  void write_source(const std::string& source) const;
  /// Signs (options.sign_key) and writes the artifact; sets the report's size and time.
  void write_artifact(artifact::ArtifactWriter& w, CompileReport& report) const;
};

/// The report's kernels and arena from what the codegen compiled (`plan`: one lane's).
void report_build(CompileReport& report, const std::vector<codegen::cpu::CompiledTask>& tasks,
                  const MemoryPlan& plan);

/// The drivers of the targets.
CompileReport compile_for_cpu(const CompileJob& job);
CompileReport compile_for_cuda(const CompileJob& job);

/// The lanes a CUDA compile (or tuning) at `batch` splits the batch into: --lanes `option`, a
/// number that divides the batch (empty: 1). Raises a UserError for anything else.
int cuda_lanes(const std::string& option, int batch);

/// The detector at `path` imported (options.batch, imgsz, family; `outputs` as its outputs
/// when given) and optimized for target cpu in fp32: the graph compile lowers, and the one
/// `yoloc tune` takes its tasks from.
ImportedDetector import_for_cpu(const std::string& path, const ModelOptions& options,
                                const std::vector<std::string>& outputs = {});
/// The same for target cuda at `precision` (fp32, fp16, bf16); options.io_precision narrow:
/// the graph's float32 inputs and outputs stored in that type too.
ImportedDetector import_for_cuda(const std::string& path, const ModelOptions& options,
                                 Precision precision,
                                 const std::vector<std::string>& outputs = {});
/// The records file shipped for the CUDA target's `arch` ("sm_90"): the first of
/// <prefix>/share/yoloc/records/cuda-<arch>.jsonl for the yoloc binary in <prefix>/bin,
/// share/yoloc/records/cuda-<arch>.jsonl beside the binary (a build folder), and
/// records/cuda-<arch>.jsonl in the source tree yoloc was built from; empty when none exists.
std::string default_cuda_records(const std::string& arch);
/// fp32 / fp16 / bf16 from a --precision of the cuda target ("auto": fp16); raises a UserError
/// otherwise.
Precision cuda_precision(const std::string& name);
/// Whether an --io-precision asks for narrow inputs and outputs: false for "" and "fp32"; true
/// for the type of `precision` ("fp16" with kFp16, "bf16" with kBf16); a UserError otherwise.
bool narrow_io(const std::string& io_precision, Precision precision);

}  // namespace yoloc::compiler
