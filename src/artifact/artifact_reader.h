#pragma once
/// Reads `.ycm` artifacts (runtime side): maps the file, checks header, size, digest and
/// signature, parses the manifest and hands out the blobs in place. Depends on core, libsodium
/// and nlohmann-json only.
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "artifact/format.h"
#include "artifact/manifest.h"

namespace yoloc::artifact {

struct ReadOptions {
  /// When set, the artifact must carry a valid signature by this public key (see signing.h).
  std::string public_key_file;
};

/// An opened, verified artifact. The blobs point into a read-only mapping of the file that lives
/// as long as the Artifact.
class Artifact {
 public:
  /// Opens and verifies `path`. Raises a UserError with a one-line message (what is wrong, what
  /// to do) for a missing or empty file, a file that is not an artifact, a newer format version,
  /// truncation, a digest mismatch, a bad or missing signature, a malformed manifest or a blob
  /// outside the file.
  static Artifact open(const std::string& path, const ReadOptions& options = {});

  Artifact(Artifact&&) noexcept;
  Artifact& operator=(Artifact&&) noexcept;
  ~Artifact();

  const Manifest& manifest() const { return manifest_; }
  const Header& header() const { return header_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }
  /// True when a signature was present and checked against ReadOptions::public_key_file.
  bool signature_verified() const { return signature_verified_; }
  /// The bytes of blob `name` (64-byte aligned in memory); raises a UserError if there is none.
  std::span<const std::byte> blob(const std::string& name) const;

 private:
  struct Mapping;
  Artifact() = default;
  static std::unique_ptr<Mapping> map_file(const std::string& path);

  std::string path_;
  std::unique_ptr<Mapping> map_;
  Header header_;
  Manifest manifest_;
  bool signature_verified_ = false;
};

}  // namespace yoloc::artifact
