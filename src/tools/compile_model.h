#pragma once
/// `yoloc compile`: an ONNX detector in, a `.ycm` artifact out (the manifest with everything the
/// runtime needs to run it as a detector, the weights and the kernels).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "codegen/cpu/cpu_compiler.h"
#include "passes/pass.h"
#include "tools/detector_model.h"
#include "tools/int8_calibration.h"

namespace yoloc::tools {

struct CompileOptions {
  DetectorModelOptions model;  ///< path, --family, --imgsz, --batch
  std::string output;          ///< -o
  std::string target = "cpu";  ///< "cpu" or "cuda"
  std::string arch;            ///< --arch for cuda: sm_80, sm_90, ...; empty: sm_90
  std::string cc;   ///< --cc: another C++ compiler (cross compilation); empty: the host's
  std::string isa;  ///< --isa: avx512, avx2, neon, generic; empty: what the compiler targets
  std::string sign_key;  ///< --sign: Ed25519 secret key file
  bool force = false;    ///< overwrite an existing output
  std::string emit_source;  ///< --emit-source: also write the generated kernel source here
  /// --outputs: compile these values of the model as its outputs instead (for debugging a
  /// compile against `yoloc exec --outputs`; the artifact is then no detector).
  std::vector<std::string> outputs;
  /// Tuned configs by workload key; tasks without one take their default.
  std::map<std::string, codegen::ScheduleConfig> configs;
  /// --records: a tuning records file; the best valid record of each workload for this
  /// machine (and batch; cuda: for this arch, on any device) is applied where `configs` has
  /// none; cuda: a conv workload without records of this batch takes its best config at the
  /// nearest batch that has some. Empty with --target cuda: the shipped records of the arch, if
  /// any (default_cuda_records).
  std::string records;
  /// --no-records: apply no tuning records, not even the shipped ones (untuned defaults).
  bool no_records = false;
  /// --no-cache: build every kernel, neither reading nor filling the user's kernel build cache
  /// (codegen/build_cache.h).
  bool no_cache = false;
  /// --b2b (cuda): which back-to-back conv pairs run as one kernel each (B2bPolicy): "measured"
  /// (the default, also when empty: those the records measured faster than their two kernels at
  /// this batch), "on" (every pair) or "off". Empty: not given (the cpu target refuses it).
  std::string b2b;
  /// --stem-pair (cuda): the first two convs as one kernel (CudaCompileOptions::stem_pairs).
  bool stem_pair = false;
  /// --memory-reuse (cuda): "ordered" (the default, also when empty) or "sequential"
  /// (CudaCompileOptions::reuse). Empty: not given (the cpu target refuses it).
  std::string memory_reuse;
  /// --precision int8: the calibration and which convs stay float (tools/int8_calibration.h).
  Int8Options int8;
};

/// What a compile made.
struct CompileReport {
  uint64_t artifact_bytes = 0;
  double seconds = 0;
  std::string target;  ///< the manifest's: cpu-avx512, cuda-sm_90, ...
  std::vector<codegen::cpu::CompiledTask> tasks;
  int tuned = 0;
  MemoryPlan plan;
  uint64_t weights_bytes = 0;
  uint64_t kernel_bytes = 0;
  double backend_seconds = 0;  ///< the host compiler's / NVRTC's share of `seconds`
  int builds = 0;         ///< kernel builds (cuda: one per module; cpu: one shared object)
  int cached_builds = 0;  ///< of them, taken from the kernel build cache
  int records_applicable = 0;  ///< records of the --records file for this machine and ISA
  int records_stale = 0;       ///< records of other tool / format versions (ignored)
  std::string records_file;    ///< the records file applied (cuda: maybe the shipped default)
  /// cuda: the workloads whose config came from records of another batch (no record of their
  /// own batch), with that batch; a task of one of them is tuned if the config is valid for it.
  std::map<std::string, int64_t> nearest_batch;
  /// cuda: the conv workloads writing NCHW or an upsampled copy too whose config came from
  /// their NHWC-output twin (nhwc_output_twin).
  std::set<std::string> layout_twin;
  /// cuda: the lanes the batch runs as (cuda_lanes); the report's tasks and plan are one lane's.
  int lanes = 1;
  /// cuda: the program's whole device buffer (every lane's arena, the inputs, the scratch).
  uint64_t arena_bytes = 0;
  /// --precision int8: the convs quantized (run as fake-quant on the float kernels).
  int int8_convs = 0;
};

/// The lanes a CUDA compile (or tuning) at `batch` splits the batch into: --lanes `option`, a
/// number that divides the batch (empty: 1). Raises a UserError for anything else.
int cuda_lanes(const std::string& option, int batch);

/// The detector imported (options.batch, --imgsz, --family; `outputs` as its outputs when given)
/// and optimized for target cpu in fp32: the graph compile_model lowers, and the one
/// `yoloc tune` takes its tasks from.
/// `int8`: the convs to quantize (compile --precision int8), null for none.
ImportedDetector import_for_cpu(const DetectorModelOptions& options,
                                const std::vector<std::string>& outputs = {},
                                const Int8Plan* int8 = nullptr);
/// The same for target cuda at `precision` (fp32, fp16, bf16); options.io_precision narrow:
/// the graph's float32 inputs and outputs stored in that type too.
ImportedDetector import_for_cuda(const DetectorModelOptions& options, Precision precision,
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

/// Compiles the model into an artifact written at options.output (through a temporary file).
/// Raises a UserError for an output that exists (unless force) or equals the model, an
/// unsupported target / precision, or anything the import and the backend refuse.
CompileReport compile_model(const CompileOptions& options);

/// An artifact to run: the given .ycm, or an ONNX model compiled for this machine into a
/// temporary folder (removed with the object).
struct PreparedArtifact {
  std::string path;
  double compile_seconds = 0;  ///< 0 when the model was an artifact already
  std::string temp_dir;
  PreparedArtifact() = default;
  PreparedArtifact(PreparedArtifact&& o) noexcept
      : path(std::move(o.path)), compile_seconds(o.compile_seconds), temp_dir(std::exchange(o.temp_dir, {})) {}
  PreparedArtifact& operator=(PreparedArtifact&&) = delete;
  ~PreparedArtifact();
};

/// `model` itself when it is a .ycm, else its compile for target cpu at `batch` (0: 1).
PreparedArtifact prepare_artifact(const std::string& model, int batch);

}  // namespace yoloc::tools
