#pragma once
/// What the CUDA target's options mean: lanes, precision, narrow I/O, the shipped records; and
/// its optimized graph.
#include <string>
#include <vector>

#include "compiler/detector_import.h"
#include "passes/pass.h"
#include "yoloc/compiler.h"

namespace yoloc::targets {

/// The lanes a CUDA compile (or tuning) at `batch` splits the batch into: --lanes `option`, a
/// number that divides the batch (empty: 1). Raises a UserError for anything else.
int cuda_lanes(const std::string& option, int batch);

/// The detector at `path` imported (options.batch, imgsz, family; `outputs` as its outputs
/// when given) and optimized for the cuda target at `precision` (fp32, fp16, bf16);
/// options.io_precision narrow: the graph's float32 inputs and outputs stored in that type too.
compiler::ImportedDetector import_for_cuda(const std::string& path, const ModelOptions& options,
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

}  // namespace yoloc::targets
