#pragma once
/// Writes `.ycm` artifacts (compiler side): manifest + 64-byte aligned blobs + SHA-256 digest,
/// optionally signed with an Ed25519 key.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifact/manifest.h"
#include "artifact/signing.h"

namespace yoloc::artifact {

/// Collects a manifest and named blobs, then writes them as one artifact file.
class ArtifactWriter {
 public:
  explicit ArtifactWriter(Manifest manifest) : manifest_(std::move(manifest)) {}

  /// Adds a blob (copied). Raises a UserError when `name` is already taken.
  void add_blob(const std::string& name, const std::string& kind, std::string_view bytes);
  /// Signs the artifact with the secret key in `path` (see signing.h for the file format).
  void sign_with_key_file(const std::string& path) { key_ = load_secret_key(path); }

  /// The complete file contents.
  std::string serialize() const;
  /// Writes serialize() to `path` (through a temporary file, renamed into place).
  void write(const std::string& path) const;

 private:
  Manifest manifest_;
  std::vector<std::string> blob_data_;  ///< parallel to manifest_.blobs
  std::optional<SecretKey> key_;
};

/// Lays out an artifact from the manifest text as given and the blob section (whose start the
/// function aligns), appends the digest and, with a key, the signature. ArtifactWriter's
/// building block; tests use it to make artifacts with malformed manifests.
std::string pack_artifact(std::string_view manifest_text, std::string_view blob_section,
                          const std::optional<SecretKey>& key);

}  // namespace yoloc::artifact
