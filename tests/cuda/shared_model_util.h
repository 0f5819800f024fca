#pragma once
// A shared model (../shared/models, or $YOLOC_SHARED_DIR/models) imported at a fixed batch and
// 640x640 and optimized for the CUDA target, as the CUDA tests take them.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "frontend/onnx/importer.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::codegen::cuda::testing {

/// The model `file` optimized for "cuda" at `precision`; nullptr when the shared models are not
/// there (the caller skips).
inline std::unique_ptr<Graph> shared_cuda_model(const char* file, Precision precision,
                                                int64_t batch = 1) {
  const char* env = std::getenv("YOLOC_SHARED_DIR");
  const auto path = std::filesystem::path(env ? env : YOLOC_SHARED_DIR) / "models" / file;
  if (!std::filesystem::exists(path)) return nullptr;
  onnx_frontend::ImportOptions io;
  io.fix_dims = {{"batch", batch}, {"height", 640}, {"width", 640}};
  auto g = onnx_frontend::import_onnx(path.string(), io);
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = precision;
  optimize(*g, ctx);
  return g;
}

}  // namespace yoloc::codegen::cuda::testing
