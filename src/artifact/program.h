#pragma once
/// The program of a CPU artifact: which kernels run, in which order, on which bytes. It is the
/// manifest's "program" object, a part of the artifact format: the compiler writes it
/// (codegen/cpu), the executor reads it (runtime/executor), neither includes the other.
///
///   "program": {
///     "abi": 1,                       // YOLOC_KERNEL_ABI_VERSION the kernels were built for
///     "kernel_blob": "kernels.so",    // the blob holding the shared object
///     "arena_bytes": 123456,          // size of the one activation arena
///     "inputs":  [{"offset": 0}],     // arena byte offset of each manifest input, same order
///     "outputs": [{"offset": 4096}],  // arena byte offset of each manifest output, same order
///     "calls": [                      // run in this order
///       {"symbol": "k0", "work_items": 64,
///        "args": [{"buffer": "arena", "offset": 0, "bytes": 4096},
///                 {"buffer": "weights", "offset": 128, "bytes": 256}],
///        "params": [16, 3],
///        "task": {"group": "Conv+SiLU", ...}}  // optional: what it computes, for tools
///     ]
///   }
///
/// A binding's buffer is "arena" or the name of a blob of the artifact (weights are used in
/// place, read-only). Every binding must lie inside its buffer, every input and output inside
/// the arena (their sizes come from the manifest's tensor specs); offsets into the arena are
/// multiples of 64 only if the compiler wants them aligned (the arena itself starts 64-aligned).
/// Kernels follow include/yoloc/kernel_abi.h.
#include <cstdint>
#include <string>
#include <vector>

#include "artifact/manifest.h"

namespace yoloc::artifact {

/// Where a kernel argument points.
struct Binding {
  std::string buffer;  ///< "arena" or a blob name
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct KernelCall {
  std::string symbol;
  int64_t work_items = 1;  ///< >= 1
  std::vector<Binding> args;
  std::vector<int64_t> params;
  /// What the call computes, for tools (profile, inspect): {"group", "template", "key",
  /// "config", "flops"}; the runtime does not read it.
  nlohmann::json task = nlohmann::json::object();
};

struct Program {
  std::string kernel_blob;
  uint64_t arena_bytes = 0;
  std::vector<uint64_t> input_offsets;   ///< parallel to Manifest::inputs
  std::vector<uint64_t> output_offsets;  ///< parallel to Manifest::outputs
  std::vector<KernelCall> calls;
};

/// The buffer name of the arena in bindings.
inline constexpr const char* kArena = "arena";

/// Byte size of a tensor spec (dtype size times the product of the shape); raises a UserError
/// naming `where` for an unknown dtype or a negative dimension.
uint64_t spec_bytes(const TensorSpec& spec, const std::string& where);

/// Typed access to a program's JSON for the parsers of every target's program; each accessor
/// raises a UserError naming `where` (the artifact) and the field of the first problem.
struct ProgramReader {
  const std::string& where;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const;
  const nlohmann::json& at(const nlohmann::json& obj, const std::string& path,
                           const std::string& key) const;
  uint64_t uint(const nlohmann::json& obj, const std::string& path, const std::string& key) const;
  std::string str(const nlohmann::json& obj, const std::string& path, const std::string& key) const;
  const nlohmann::json& array(const nlohmann::json& obj, const std::string& path,
                              const std::string& key) const;
  /// Fails unless [offset, offset + bytes) lies in a buffer of `size` bytes (no overflow).
  void check_inside(const std::string& field, uint64_t offset, uint64_t bytes, uint64_t size,
                    const std::string& buffer) const;
  /// The arena offsets of prog[key] ("inputs" / "outputs"), one per spec, each tensor inside
  /// an arena of `arena` bytes.
  std::vector<uint64_t> tensor_offsets(const nlohmann::json& prog, const std::string& key,
                                       const std::vector<TensorSpec>& specs,
                                       uint64_t arena) const;
  /// A binding at prog path `path` ({"buffer", "offset", "bytes"}) inside the arena of
  /// `arena` bytes or the manifest's blob it names.
  Binding binding(const nlohmann::json& obj, const std::string& path,
                  const Manifest& m, uint64_t arena) const;
};

/// "path[i]".
std::string json_item(const std::string& path, size_t i);

/// Parses and checks m.program: fields present and typed, the ABI version this runtime speaks,
/// blobs that exist, every binding and tensor inside its buffer. Raises a UserError naming
/// `where` (the artifact path) and the offending field otherwise.
Program parse_program(const Manifest& m, const std::string& where);

/// The program as manifest JSON (what parse_program reads); the compiler side writes it.
nlohmann::json program_to_json(const Program& p);

}  // namespace yoloc::artifact
