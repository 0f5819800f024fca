#pragma once
/// A target kind behind one interface (what TVM calls a target kind and ggml a backend): its
/// attributes, which the graph passes read, and what it does: import and optimize a model for
/// itself, lower the fused graph into its tasks, pick a template per task, emit and build the
/// kernels and write the artifact (compile), give the tuner its tasks and measurer, and name the
/// runtime executor of its artifacts. Each kind lives in a folder of its own (src/targets/cpu,
/// src/targets/cuda) and registers itself once (TargetRegistration); a kind built only with
/// its toolkit (CUDA) is compiled, and so registered, only then (a CMake option). The compile
/// driver, the passes and the commands ask a target, never compare its name.
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "passes/target_attributes.h"
#include "tuner/measure.h"
#include "tuner/target.h"
#include "tuner/task_list.h"
#include "yoloc/compiler.h"

namespace yoloc::targets {

/// What a tuning run asks of a target.
struct TuneRequest {
  std::string arch;          ///< --arch (kernels for that GPU architecture); empty: the default
  std::string isa;           ///< --isa (kernels for that vector ISA); empty: the host's
  std::vector<int> devices;  ///< --devices: where candidates are measured
  bool list_only = false;    ///< only the tasks are wanted (--list-tasks): no device is asked
};

/// The tasks of a model a tuning run measures, and the hardware its records are stored for.
struct TuneSetup {
  std::vector<tuner::TuneTask> tasks;
  tuner::TuneTarget target;
};

class Target {
 public:
  virtual ~Target() = default;
  /// The name `--target` takes ("cpu", "cuda").
  virtual std::string name() const = 0;
  /// What the passes ask of it; `variant`: one of its sub-kinds (the cpu's "avx2"), empty: the
  /// one compile optimizes for. Raises a UserError for a variant it does not have.
  virtual TargetAttributes attributes(const std::string& variant = "") const = 0;
  /// The ONNX detector at `path` imported (`outputs` as its outputs when given) and optimized
  /// for this target at model.precision. Raises a UserError for a precision it does not take.
  virtual compiler::ImportedDetector import_model(
      const std::string& path, const ModelOptions& model,
      const std::vector<std::string>& outputs = {}) const = 0;
  /// Imports, lowers, builds the kernels and writes the artifact of `job`. Raises a UserError for
  /// an option it does not take, a task none of its templates supports, or a failed build.
  virtual CompileReport compile(const compiler::CompileJob& job) const = 0;
  /// The lanes a compile at model.batch runs (copies of the kernels of a smaller batch, each
  /// on its slice; 1: none). Raises a UserError for lanes it does not take.
  virtual int lanes(const ModelOptions& model) const = 0;
  /// The tuning tasks of `g` (as import_model() optimizes it) and the target of their records.
  virtual TuneSetup tuning(const Graph& g, const TuneRequest& request) const = 0;
  /// The tuner's measurer of its kernels on `devices` (of `target`, as tuning() gave it).
  virtual std::unique_ptr<tuner::Measurer> make_measurer(const tuner::MeasureOptions& options,
                                                         const tuner::TuneTarget& target,
                                                         const std::vector<int>& devices) const = 0;
  /// The runtime executor that runs its artifacts (runtime/executor.h, runtime/cuda/...); the
  /// manifest's target starts with it.
  virtual std::string executor() const = 0;
};

/// Registers a target kind (once per name: a second is an internal error).
void register_target(std::unique_ptr<Target> target);
/// The registered target `name`. Raises a UserError naming the targets this build has.
const Target& find_target(const std::string& name);
/// The names of the registered targets, sorted.
std::vector<std::string> target_names();
/// The attributes of "reference" (the reference executor: the graph as it is), of a registered
/// target ("cpu") or of one of its variants ("cpu-avx2"). Raises a UserError otherwise.
TargetAttributes attributes(const std::string& spec);

/// A static object of this type in a target's folder registers it when the program starts.
template <class T>
struct TargetRegistration {
  TargetRegistration() { register_target(std::make_unique<T>()); }
};

}  // namespace yoloc::targets
