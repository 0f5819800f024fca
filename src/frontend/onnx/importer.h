#pragma once
/// Imports an ONNX model file into the IR, with shape and type inference.
#include <memory>
#include <string>

#include "ir/graph.h"

namespace yoloc::onnx_frontend {

/// The ai.onnx opsets the importer accepts (a model's default-domain opset must lie in between).
/// Within the range, an op is accepted only where a converter covers the model's opset (the
/// converter with the largest since_version <= opset): old forms without one (Add-6's legacy
/// broadcast, BatchNormalization-6, Concat-1, ...) and new ops are rejected by name. Up to 28,
/// the newer versions of the supported ops add types, or attributes their converters handle.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 28;

struct ImportOptions {
  /// Overrides for symbolic input dims, e.g. {"height": 320, "width": 320}; also accepts
  /// "<input>:<axis>" keys.
  std::map<std::string, int64_t> fix_dims;
};

/// Loads and converts `path`. Raises a UserError for a missing, empty, truncated or non-ONNX
/// file, an unsupported op (naming the op, node, opset and what is supported), or an invalid
/// graph.
std::unique_ptr<Graph> import_onnx(const std::string& path, const ImportOptions& opts = {});

/// Same, from serialized bytes; `what` names the source in messages.
std::unique_ptr<Graph> import_onnx_bytes(const std::string& bytes, const std::string& what,
                                         const ImportOptions& opts = {});

}  // namespace yoloc::onnx_frontend
