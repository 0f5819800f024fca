#pragma once
/// The yoloc compiler's C++ API: an ONNX detector in, a `.ycm` artifact out. One call imports
/// the model, optimizes the graph for the target, lowers it into kernels (with the tuning
/// records' configs where there are some), builds them and writes the artifact (manifest,
/// weights, kernels; signed when asked). The `yoloc compile` command is this call plus printing.
/// Errors raise yoloc::UserError (a std::runtime_error) with a message that says what is wrong
/// and what to do. Links against the compiler (yoloc_all). Self-contained: the standard library
/// only.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace yoloc {

/// How the model is read: the detector it is (family, input size, thresholds the artifact
/// stores), its batch and the numerics it is compiled to.
struct ModelOptions {
  std::string family;  ///< yolov5, yolov8, yolo11, yolov10, yolox; empty: from the model
  int imgsz = 0;       ///< 0: the model's static size, metadata imgsz, else 640
  float conf = 0.25f;  ///< the score threshold the artifact stores
  float iou = 0.45f;   ///< the NMS IoU threshold the artifact stores
  int max_det = 300;   ///< the most detections per image the artifact stores
  int batch = 1;       ///< images per run
  /// False where only the network matters (tuning): a model whose family cannot be told is
  /// imported as the default family instead of demanding `family`.
  bool family_needed = true;
  /// "auto" (the target's default: cpu fp32, cuda fp16), "fp32", "fp16", "bf16", and on the
  /// cpu "int8" (with CompileOptions::int8's calibration).
  std::string precision = "auto";
  /// cuda: "fp32" (also when empty) keeps float32 inputs and outputs; "fp16" / "bf16" (the
  /// precision's own type) stores them narrow too.
  std::string io_precision;
  /// cuda: the concurrent lanes the batch is split into, a number dividing the batch. Empty:
  /// not given (1; the cpu target refuses it).
  std::string lanes;
};

/// Post-training int8 (precision "int8", the cpu target): where the activation ranges come from
/// and which convs stay float.
struct Int8Options {
  std::string calibration;       ///< a folder of calibration images (or a dataset with images/)
  std::string calibration_file;  ///< or the calibration `yoloc calibrate -o` wrote for the model
  int images = 128;              ///< calibrate on the first N images of the folder by name
  std::string method;            ///< mse, entropy, percentile, minmax; empty: the file's, else mse
  std::vector<std::string> skip;  ///< wildcards of convs (output or node names) kept in float
  bool no_bias_correction = false;  ///< leave the biases as they are
  int sensitivity_images = 0;  ///< calibration: each conv's sensitivity on the first N images
  double max_map_drop = 0;     ///< accuracy-aware mode (0: off): most sensitive convs to float
  std::string validation;      ///< until the mAP50-95 drop on this dataset folder holds
  bool any() const {
    return !calibration.empty() || !calibration_file.empty() || !method.empty() || !skip.empty() ||
           max_map_drop > 0 || !validation.empty();
  }
};

struct CompileOptions {
  ModelOptions model;
  std::string output;          ///< the artifact to write (.ycm)
  std::string target = "cpu";  ///< a registered target: "cpu", "cuda" (when built)
  std::string arch;            ///< cuda: sm_80, sm_90, ...; empty: sm_90
  std::string cc;   ///< cpu: another C++ compiler (cross compilation); empty: the host's
  std::string isa;  ///< cpu: avx512, avx2, neon, generic; empty: what the compiler targets
  std::string sign_key;  ///< an Ed25519 secret key file to sign the artifact with
  bool force = false;    ///< overwrite an existing output
  std::string emit_source;  ///< also write the generated kernel source here
  /// Compile these values of the model as its outputs instead (for debugging a compile against
  /// `yoloc exec --outputs`; the artifact is then no detector).
  std::vector<std::string> outputs;
  /// A tuning records file: the best valid record of each workload for this machine (and
  /// batch; cuda: for this arch, on any device) is applied; cuda: a conv workload without
  /// records of this batch takes its best config at the nearest batch that has some. Empty
  /// with target cuda: the shipped records of the arch, if any.
  std::string records;
  /// Apply no tuning records, not even the shipped ones (untuned defaults).
  bool no_records = false;
  /// Build every kernel, neither reading nor filling the user's kernel build cache.
  bool no_cache = false;
  /// cuda: which back-to-back conv pairs run as one kernel each: "measured" (the default, also
  /// when empty: those the records measured faster than their two kernels at this batch), "on"
  /// (every pair) or "off". Empty: not given (the cpu target refuses it).
  std::string b2b;
  /// cuda: the first two convs as one kernel.
  bool stem_pair = false;
  /// cuda: "ordered" (the default, also when empty) or "sequential" reuse of the arena's dead
  /// bytes. Empty: not given (the cpu target refuses it).
  std::string memory_reuse;
  /// precision "int8": the calibration and which convs stay float.
  Int8Options int8;
};

/// One kernel of the artifact.
struct CompiledKernel {
  std::string key;            ///< the workload key (what tuning records are keyed by)
  std::string template_name;  ///< the kernel template that emitted it
  std::string group_name;     ///< the fused group of the graph it computes
  std::string config;         ///< the schedule config it was emitted with
  bool tuned = false;         ///< the config came from tuning records (else the default)
};

/// What a compile made.
struct CompileReport {
  uint64_t artifact_bytes = 0;
  double seconds = 0;
  std::string target;  ///< the manifest's: cpu-avx512, cuda-sm_90, ...
  std::vector<CompiledKernel> kernels;
  int tuned = 0;
  uint64_t arena_bytes = 0;        ///< the memory plan's activation arena (one lane's)
  uint64_t naive_arena_bytes = 0;  ///< every intermediate in a buffer of its own
  uint64_t weights_bytes = 0;
  uint64_t kernel_bytes = 0;
  double backend_seconds = 0;  ///< the host compiler's / NVRTC's share of `seconds`
  int builds = 0;         ///< kernel builds (cuda: one per module; cpu: one shared object)
  int cached_builds = 0;  ///< of them, taken from the kernel build cache
  int records_applicable = 0;  ///< records of the records file for this machine and ISA
  int records_stale = 0;       ///< records of other tool / format versions (ignored)
  std::string records_file;    ///< the records file applied (cuda: maybe the shipped default)
  /// cuda: the workloads whose config came from records of another batch (no record of their
  /// own batch), with that batch.
  std::map<std::string, int64_t> nearest_batch;
  /// cuda: the conv workloads writing NCHW or an upsampled copy too whose config came from
  /// their NHWC-output twin.
  std::set<std::string> layout_twin;
  /// cuda: the lanes the batch runs as; the report's kernels and arena are one lane's.
  int lanes = 1;
  /// cuda: the program's whole device buffer (every lane's arena, the inputs, the scratch).
  uint64_t device_buffer_bytes = 0;
  /// precision "int8": the convs quantized (run as fake-quant on the float kernels).
  int int8_convs = 0;
};

/// Compiles the ONNX detector at `model` into the artifact at options.output (written through
/// a temporary file). Raises a UserError for an output that exists (unless force) or equals the
/// model, an unknown or unbuilt target, an option the target does not take, or anything the
/// import and the kernel build refuse.
CompileReport compile(const std::string& model, const CompileOptions& options);

/// The names of the targets this build compiles for ("cpu", "cuda", ...).
std::vector<std::string> compile_targets();

}  // namespace yoloc
