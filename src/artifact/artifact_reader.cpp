#include "artifact/artifact_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "artifact/signing.h"
#include "core/error.h"

namespace yoloc::artifact {

/// A read-only private mapping of the whole file.
struct Artifact::Mapping {
  const std::byte* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) ::munmap(const_cast<std::byte*>(data), size);
  }
};

Artifact::Artifact(Artifact&&) noexcept = default;
Artifact& Artifact::operator=(Artifact&&) noexcept = default;
Artifact::~Artifact() = default;

namespace {

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  user_error("artifact '{}' is corrupt: {}; recompile the model or copy the file again", path,
             what);
}

}  // namespace

std::unique_ptr<Artifact::Mapping> Artifact::map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    user_error("cannot open artifact '{}': {}; check the path", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    user_error("artifact '{}' is not a regular file; give the path of a .ycm file", path);
  }
  auto m = std::make_unique<Artifact::Mapping>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size == 0) {
    ::close(fd);
    user_error("artifact '{}' is empty; recompile the model with yoloc compile", path);
  }
  void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    user_error("cannot map artifact '{}' into memory: {}", path, std::strerror(errno));
  m->data = static_cast<const std::byte*>(p);
  return m;
}

namespace {

/// Checks magic, version and the section layout against the file size.
Header check_header(const std::string& path, const std::byte* data, size_t size) {
  const size_t n = std::min(size, kMagic.size());
  if (std::memcmp(data, kMagic.data(), n) != 0)
    user_error("'{}' is not a yoloc artifact (bad magic); give a .ycm file made by yoloc compile",
               path);
  if (size < kHeaderSize)
    user_error(
        "artifact '{}' is truncated ({} bytes, shorter than its {}-byte header); copy the "
        "file again or recompile the model",
        path, size, kHeaderSize);
  const Header h = decode_header(data);
  if (h.format_version == 0 || h.format_version > kFormatVersion)
    user_error(
        "artifact '{}' has format version {}, but this yoloc reads versions 1 to {}; "
        "update yoloc or recompile the model with this version",
        path, h.format_version, kFormatVersion);
  if (size < h.file_size)
    user_error(
        "artifact '{}' is truncated ({} of {} bytes); copy the file again or recompile "
        "the model",
        path, size, h.file_size);
  if (size > h.file_size)
    corrupt(path, fmt::format("{} bytes where the header says {}", size, h.file_size));
  if ((h.flags & ~kFlagSigned) != 0) corrupt(path, fmt::format("unknown flags {:#x}", h.flags));
  // Each section starts where the previous one ends (up to alignment) and ends inside the file;
  // the subtractions guard every sum against overflow.
  const uint64_t tail = kDigestSize + (h.is_signed() ? kSignatureSize : 0);
  const bool ok = h.manifest_offset == kHeaderSize && h.file_size >= tail &&
                  h.digest_offset == h.file_size - tail &&
                  h.manifest_size <= h.digest_offset - h.manifest_offset &&
                  h.blobs_offset == align_up(h.manifest_offset + h.manifest_size) &&
                  h.blobs_offset <= h.digest_offset &&
                  h.blobs_size == h.digest_offset - h.blobs_offset;
  if (!ok) corrupt(path, "its header's section offsets do not fit the file");
  return h;
}

}  // namespace

Artifact Artifact::open(const std::string& path, const ReadOptions& options) {
  Artifact a;
  a.path_ = path;
  a.map_ = map_file(path);
  const std::byte* data = a.map_->data;
  a.header_ = check_header(path, data, a.map_->size);
  const Header& h = a.header_;

  // Load the key before hashing so a bad key file is reported as such.
  std::optional<PublicKey> key;
  if (!options.public_key_file.empty()) key = load_public_key(options.public_key_file);
  Digest digest = sha256({data, h.digest_offset});
  if (std::memcmp(digest.data(), data + h.digest_offset, kDigestSize) != 0)
    user_error(
        "artifact '{}' fails its SHA-256 digest check: the file is corrupt or was "
        "tampered with; copy it again or recompile the model",
        path);
  if (key) {
    if (!h.is_signed())
      user_error(
          "artifact '{}' is not signed, but a public key was given ('{}'); sign it when "
          "compiling or load it without a key",
          path, options.public_key_file);
    Signature sig;
    std::memcpy(sig.data(), data + h.digest_offset + kDigestSize, sig.size());
    if (!verify_digest(digest, sig, *key))
      user_error(
          "artifact '{}' has a bad signature: it was not signed with the key matching "
          "'{}' or was tampered with; do not use it",
          path, options.public_key_file);
    a.signature_verified_ = true;
  }

  const char* text = reinterpret_cast<const char*>(data + h.manifest_offset);
  nlohmann::json j = nlohmann::json::parse(text, text + h.manifest_size, nullptr, false);
  if (j.is_discarded()) corrupt(path, "its manifest is not valid JSON");
  a.manifest_ = manifest_from_json(j, path);
  for (const BlobEntry& b : a.manifest_.blobs) {
    if (b.offset % kBlobAlignment != 0 || b.offset > h.blobs_size ||
        b.size > h.blobs_size - b.offset)
      corrupt(path, fmt::format("blob '{}' (offset {}, {} bytes) lies outside the {}-byte blob "
                                "section or is not {}-byte aligned",
                                b.name, b.offset, b.size, h.blobs_size, kBlobAlignment));
  }
  return a;
}

std::span<const std::byte> Artifact::blob(const std::string& name) const {
  const BlobEntry* b = manifest_.find_blob(name);
  if (!b)
    user_error(
        "artifact '{}' has no blob '{}'; it was compiled by an incompatible yoloc: "
        "recompile the model",
        path_, name);
  return {map_->data + header_.blobs_offset + b->offset, b->size};
}

}  // namespace yoloc::artifact
