#pragma once
/// The JSON manifest of a `.ycm` artifact: what the model takes and gives, how to pre- and
/// post-process, what it was compiled for, and where each blob lies.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace yoloc::artifact {

/// A model input or output: name, dtype name ("float32", see dtype_name) and static shape.
struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

/// One entry of the blob table. `offset` is relative to the blob section's start and a multiple
/// of kBlobAlignment.
struct BlobEntry {
  std::string name;  ///< unique, e.g. "weights", "kernels.so"
  std::string kind;  ///< what the bytes are: "weights", "kernel_so", ...
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct Manifest {
  std::string tool_version;  ///< the yoloc version that wrote it
  std::string family;        ///< detector family: "yolov8", "yolox", ...
  std::string target;        ///< "cpu", "cpu-neon", "cuda", ...
  std::string precision;     ///< "fp32", "fp16", "int8", ...
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<std::string> class_names;
  nlohmann::json preprocess = nlohmann::json::object();   ///< letterbox size, scaling, ...
  nlohmann::json postprocess = nlohmann::json::object();  ///< decoder, thresholds, NMS
  nlohmann::json memory_plan = nlohmann::json::object();  ///< arena size and value offsets
  /// What the runtime executes (schema in artifact/program.h, artifact/cuda_program.h);
  /// optional on read, so artifacts written before it existed still open (they cannot be run).
  nlohmann::json program = nlohmann::json::object();
  std::vector<BlobEntry> blobs;                           ///< filled by the writer

  /// The entry named `name`, or nullptr.
  const BlobEntry* find_blob(const std::string& name) const;
};

/// The most bytes and the deepest nesting a manifest may have: yoloc writes a few MB at depth
/// 5, so these only stop hostile files (a document nested a million deep would otherwise
/// exhaust the stack of whatever walks it).
inline constexpr size_t kMaxManifestBytes = size_t{64} << 20;
inline constexpr int kMaxManifestDepth = 32;

/// Parses manifest text, refusing more than kMaxManifestBytes or nesting deeper than
/// kMaxManifestDepth while parsing (nothing deeper is ever built); raises a one-line UserError
/// naming `where` for those and for text that is not JSON.
nlohmann::json parse_manifest_text(std::string_view text, const std::string& where);

/// The manifest as JSON (every field, always).
nlohmann::json manifest_to_json(const Manifest& m);
/// Parses a manifest; raises a UserError naming `where` and the first missing or mistyped field.
Manifest manifest_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace yoloc::artifact
