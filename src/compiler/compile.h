#pragma once
/// The compile driver behind yoloc::compile (yoloc/compiler.h): the registered target of the
/// options (targets/target.h) imports the model, optimizes it, lowers it into tasks with their
/// configs (tuning records applied), builds the kernels and writes the artifact with what every
/// target shares (CompileJob). What the tools add to the public call: configs chosen by the
/// caller (the tuner's in-model timings).
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "artifact/artifact_writer.h"
#include "codegen/cpu/cpu_compiler.h"
#include "codegen/build_cache.h"
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

/// The kernel build cache a compile uses: none with no_cache; with sign_key one it fills but
/// never reads (a signature must vouch only for kernels built here, see build_cache.h).
codegen::BuildCache* kernel_cache(const CompileOptions& options);

}  // namespace yoloc::compiler
