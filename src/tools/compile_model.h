#pragma once
/// `yoloc compile`: an ONNX detector in, a `.ycm` artifact out (the manifest with everything the
/// runtime needs to run it as a detector, the weights and the kernels).
#include <string>

#include "codegen/cpu/cpu_compiler.h"
#include "tools/detector_model.h"

namespace yoloc::tools {

struct CompileOptions {
  DetectorModelOptions model;  ///< path, --family, --imgsz, --batch
  std::string output;          ///< -o
  std::string target = "cpu";
  std::string precision = "fp32";
  std::string cc;        ///< --cc: another C++ compiler (cross compilation); empty: the host's
  std::string sign_key;  ///< --sign: Ed25519 secret key file
  bool force = false;    ///< overwrite an existing output
  bool quiet = false;
  /// Tuned configs by workload key (from records); tasks without one take their default.
  std::map<std::string, codegen::ScheduleConfig> configs;
};

/// What a compile made.
struct CompileReport {
  uint64_t artifact_bytes = 0;
  double seconds = 0;
  codegen::cpu::CpuBuild build;
};

/// Compiles the model into an artifact written at options.output (through a temporary file).
/// Raises a UserError for an output that exists (unless force) or equals the model, an
/// unsupported target / precision, or anything the import and the backend refuse.
CompileReport compile_model(const CompileOptions& options);

}  // namespace yoloc::tools
