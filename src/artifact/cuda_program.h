#pragma once
/// The program of a CUDA artifact: which kernels launch, in which order, with which geometry and
/// on which device bytes. It is the manifest's "program" object, a part of the artifact format:
/// the compiler writes it (codegen/cuda), the CUDA executor reads it (runtime/cuda), neither
/// includes the other:
///
///   "program": {
///     "kind": "cuda",
///     "arch": "sm_90",                    // what the cubins were built for
///     "modules": ["cuda_module_0", ...],  // blobs holding cubins (one per task)
///     "arena_bytes": 123456,              // the one device buffer: activations, inputs, scratch
///     "inputs":  [{"offset": 0}],         // arena byte offsets of the manifest's inputs
///     "outputs": [{"offset": 4096}],      // and outputs (dense, manifest dtype and shape)
///     "launches": [                       // in this order, on one stream
///       {"module": 0, "symbol": "yc_t0", "grid": [80, 1, 1], "block": [128, 1, 1],
///        "shared": 40960,
///        "persistent": true,            // optional: grid x capped at the blocks the GPU holds
///                                       // at once (the kernel loops over its tiles)
///        "args": [{"buffer": "arena", "offset": 0, "bytes": 4096},
///                 {"buffer": "weights", "offset": 128, "bytes": 256},
///                 {"buffer": "null"}],
///        "writes": [2],                 // optional: the args it writes (the others it
///                                       // reads); the executor runs independent launches
///                                       // on several streams only when every launch has it
///        "task": {"group": "Conv+SiLU", ...}}   // optional: for tools
///     ],
///     "detect": {"module": 3, "family": "yolov8", ...}, // optional: GPU pre/post-processing
///     "pdl": true                         // optional: kernels wait for their predecessor
///   }
///
/// Every kernel parameter is a device pointer: into the arena, into a blob uploaded to the
/// device once (the weights), or null. Bindings must lie inside their buffers.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "artifact/program.h"
#include "detect/family.h"

namespace yoloc::artifact::cuda {

/// Launch geometry of one kernel.
struct LaunchDims {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned shared_bytes = 0;  ///< dynamic shared memory
  /// Launch with programmatic stream serialization (sm_90 and later): the kernel may begin
  /// while the previous kernel of the stream still runs, so it must itself wait for it before
  /// touching memory (the generated kernels' YC_KERNEL_ENTRY does).
  bool programmatic = false;
  /// The kernel walks grid x's tiles in a grid-stride loop (gridDim.x apart): the runtime caps
  /// grid x at the blocks the device holds at once (any grid is correct).
  bool persistent = false;
};

/// One kernel of the GPU pre- and post-processing module: its extern "C" symbol and fixed
/// launch geometry.
struct DetectKernelLaunch {
  std::string symbol;
  LaunchDims dims;
};

/// The GPU pre- and post-processing kernels of a detector (codegen/cuda/detect_kernels emits
/// them, runtime/cuda/gpu_detect launches them around the network).
struct GpuDetectSpec {
  detect::Family family = detect::Family::kYoloV8;
  int input_w = 0;  ///< network input size
  int input_h = 0;
  int batch = 1;
  int max_det_cap = 0;         ///< detections per image the result buffer holds
  size_t workspace_bytes = 0;  ///< device scratch of the post-processing; zeroed once
  size_t result_bytes = 0;     ///< int count[batch] padded to 16 bytes, then detections
  size_t result_dets_offset = 0;
  /// Kernel parameters:
  ///   pre(const uint8_t* frames, const YcImageParams* images, void* network_input)
  ///   decode(const void* head, const YcDetectParams* params, uint8_t* workspace)
  ///   rank(uint8_t* workspace)
  ///   nms(const YcDetectParams* params, uint8_t* workspace, uint8_t* result)
  DetectKernelLaunch pre, decode, rank, nms;
};

/// The buffer name of a null pointer argument.
inline constexpr const char* kNullBuffer = "null";

struct CudaLaunch {
  int module = 0;
  std::string symbol;
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned shared_bytes = 0;
  /// The kernel walks grid x's tiles in a grid-stride loop: the launch caps grid x at the blocks
  /// the device holds at once ("persistent": true; absent: false).
  bool persistent = false;
  std::vector<Binding> args;  ///< buffer "arena", a blob name, or kNullBuffer
  /// The indices of the args the kernel writes; nullopt when the artifact does not say.
  std::optional<std::vector<int>> writes;
  nlohmann::json task = nlohmann::json::object();
};

struct CudaProgram {
  std::string arch;
  std::vector<std::string> modules;  ///< blob names
  uint64_t arena_bytes = 0;
  std::vector<uint64_t> input_offsets;
  std::vector<uint64_t> output_offsets;
  std::vector<CudaLaunch> launches;
  /// The GPU pre- and post-processing kernels (a detector's), in module detect_module.
  std::optional<GpuDetectSpec> detect;
  int detect_module = -1;
  /// Every kernel begins with YC_KERNEL_ENTRY (waits for the previous kernel itself), so the
  /// network's kernels may be launched with programmatic dependent launch on sm_90 and later.
  /// Absent (false) in artifacts of earlier versions.
  bool pdl = false;
  /// The launches are `lanes` copies of one lane's kernels, each on its own slice of the batch
  /// (codegen/cuda/batch_lanes.h); informational: the bindings say it all. Absent: 1.
  int lanes = 1;
};

/// True when the manifest's program is a CUDA one ("kind": "cuda").
bool is_cuda_program(const Manifest& m);

/// Parses and checks m.program: fields present and typed, modules that are blobs of the
/// artifact, every launch's module index in range and geometry within CUDA's limits, every
/// binding inside its buffer, every input and output inside the arena. Raises a UserError
/// naming `where` and the offending field otherwise.
CudaProgram parse_cuda_program(const Manifest& m, const std::string& where);

nlohmann::json cuda_program_to_json(const CudaProgram& p);

}  // namespace yoloc::artifact::cuda
