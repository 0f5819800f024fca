#pragma once
/// Reads `.ycm` artifacts (runtime side): reads the file into private memory, checks header,
/// size, digest and signature, parses the manifest and hands out the blobs in place. Depends on
/// core, libsodium and nlohmann-json only.
///
/// The trust model: an artifact holds native code, so an unsigned one is as trusted as the file
/// it came from. With one or more trusted public keys (ReadOptions::trusted_keys; the tools add
/// YOLOC_TRUSTED_KEYS, see trust.h) the reader is fail-closed: an artifact that is unsigned, or
/// whose signature no trusted key verifies, is refused before any of its bytes past the header
/// is used. The bytes verified are the bytes used: the file is read (never mapped) into memory
/// of this process, which is then made read-only.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "artifact/format.h"
#include "artifact/manifest.h"

namespace yoloc::artifact {

struct ReadOptions {
  /// Public key files (signing.h's format). When any is given, the artifact must carry a valid
  /// signature by one of them; an empty path is an error, never "no key".
  std::vector<std::string> trusted_keys;
};

/// What is known of an artifact's signature.
enum class SignatureState {
  kUnsigned,           ///< no signature
  kSignedNotVerified,  ///< signed, but no trusted key was given to check it with
  kVerified,           ///< signed by one of the trusted keys (Artifact::verified_key())
};

/// An opened, verified artifact. The blobs point into a read-only private copy of the file that
/// lives as long as the Artifact.
class Artifact {
 public:
  /// Opens and verifies `path`. Raises a UserError with a one-line message (what is wrong, what
  /// to do) for a missing or empty file, a file that is not an artifact, a newer format version,
  /// truncation, a digest mismatch, a missing or bad signature where keys are trusted, a bad key
  /// file, a malformed, too large or too deeply nested manifest or a blob outside the file.
  static Artifact open(const std::string& path, const ReadOptions& options = {});

  Artifact(Artifact&&) noexcept;
  Artifact& operator=(Artifact&&) noexcept;
  ~Artifact();

  const Manifest& manifest() const { return manifest_; }
  const Header& header() const { return header_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }
  SignatureState signature() const { return signature_; }
  /// True when a trusted key verified the signature.
  bool signature_verified() const { return signature_ == SignatureState::kVerified; }
  /// The key file that verified the signature ("" unless verified).
  const std::string& verified_key() const { return verified_key_; }
  /// "unsigned" / "signed, not verified" / "verified with KEY".
  std::string signature_text() const;
  /// The bytes of blob `name` (64-byte aligned in memory); raises a UserError if there is none.
  std::span<const std::byte> blob(const std::string& name) const;

 private:
  struct Memory;
  Artifact() = default;
  /// The regular file `path`, read whole into fresh anonymous memory made read-only.
  static std::unique_ptr<Memory> read_file(const std::string& path);

  std::string path_;
  std::unique_ptr<Memory> mem_;
  Header header_;
  Manifest manifest_;
  SignatureState signature_ = SignatureState::kUnsigned;
  std::string verified_key_;
};

}  // namespace yoloc::artifact
