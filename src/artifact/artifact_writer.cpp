#include "artifact/artifact_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace yoloc::artifact {

void ArtifactWriter::add_blob(const std::string& name, const std::string& kind,
                              std::string_view bytes) {
  if (manifest_.find_blob(name))
    user_error("artifact blob '{}' is added twice; blob names must be unique", name);
  uint64_t offset = 0;
  if (!manifest_.blobs.empty())
    offset = align_up(manifest_.blobs.back().offset + manifest_.blobs.back().size);
  manifest_.blobs.push_back({name, kind, offset, bytes.size()});
  blob_data_.emplace_back(bytes);
}

std::string ArtifactWriter::serialize() const {
  std::string section;
  for (size_t i = 0; i < blob_data_.size(); ++i) {
    section.resize(manifest_.blobs[i].offset, '\0');
    section += blob_data_[i];
  }
  return pack_artifact(manifest_to_json(manifest_).dump(), section, key_);
}

void ArtifactWriter::write(const std::string& path) const {
  const std::string bytes = serialize();
  // A temporary name of this process and call, so that writers of the same path at once (two
  // compiles of one output) each move a whole file into place, the last one winning.
  static std::atomic<uint64_t> calls{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), calls++);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) user_error("cannot write the artifact '{}'; check that the folder exists", path);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      user_error("writing the artifact '{}' failed (disk full?)", path);
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    user_error("cannot move '{}' to '{}': {}", tmp, path, why);
  }
}

std::string pack_artifact(std::string_view manifest_text, std::string_view blob_section,
                          const std::optional<SecretKey>& key) {
  Header h;
  h.flags = key ? kFlagSigned : 0;
  h.manifest_offset = kHeaderSize;
  h.manifest_size = manifest_text.size();
  h.blobs_offset = align_up(h.manifest_offset + h.manifest_size);
  h.blobs_size = blob_section.size();
  h.digest_offset = h.blobs_offset + h.blobs_size;
  h.file_size = h.digest_offset + kDigestSize + (key ? kSignatureSize : 0);

  std::string out(h.file_size, '\0');
  auto* base = reinterpret_cast<std::byte*>(out.data());
  encode_header(h, base);
  std::copy(manifest_text.begin(), manifest_text.end(), out.begin() + h.manifest_offset);
  std::copy(blob_section.begin(), blob_section.end(), out.begin() + h.blobs_offset);
  const Digest digest = sha256({base, h.digest_offset});
  std::memcpy(base + h.digest_offset, digest.data(), digest.size());
  if (key) {
    const Signature sig = sign_digest(digest, *key);
    std::memcpy(base + h.digest_offset + kDigestSize, sig.data(), sig.size());
  }
  return out;
}

}  // namespace yoloc::artifact
