#include "artifact/artifact_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/ranges.h>

#include "artifact/signing.h"
#include "core/error.h"

namespace yoloc::artifact {

/// A private, read-only copy of the whole file: anonymous memory that later writes to the file
/// cannot reach (a MAP_PRIVATE mapping of the file would still show them on pages not yet
/// copied).
struct Artifact::Memory {
  std::byte* data = nullptr;
  size_t size = 0;
  ~Memory() {
    if (data) ::munmap(data, size);
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

std::unique_ptr<Artifact::Memory> Artifact::read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    user_error("cannot open artifact '{}': {}; check the path", path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    user_error("artifact '{}' is not a regular file; give the path of a .ycm file", path);
  if (st.st_size == 0)
    user_error("artifact '{}' is empty; recompile the model with yoloc compile", path);
  auto m = std::make_unique<Artifact::Memory>();
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    user_error("cannot allocate {} bytes to read artifact '{}': {}", size, path,
               std::strerror(errno));
  m->data = static_cast<std::byte*>(p);
  m->size = size;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, m->data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) user_error("cannot read artifact '{}': {}", path, std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  char extra = 0;
  if (done != size || ::read(fd, &extra, 1) != 0)
    user_error(
        "artifact '{}' changed size while it was read; load it once nothing writes it",
        path);
  if (::mprotect(m->data, size, PROT_READ) != 0)
    internal_error("cannot make the artifact's memory read-only: {}", std::strerror(errno));
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
  // Keys first: a bad key file is reported as such, and no byte of the artifact is read
  // without the policy in hand.
  std::vector<PublicKey> keys;
  for (const std::string& k : options.trusted_keys) {
    if (k.empty())
      user_error(
          "an empty path was given as a trusted public key for '{}'; name a .pub file "
          "(yoloc keygen NAME writes one)",
          path);
    keys.push_back(load_public_key(k));
  }
  Artifact a;
  a.path_ = path;
  a.mem_ = read_file(path);
  const std::byte* data = a.mem_->data;
  a.header_ = check_header(path, data, a.mem_->size);
  const Header& h = a.header_;

  const Digest digest = sha256({data, h.digest_offset});
  if (std::memcmp(digest.data(), data + h.digest_offset, kDigestSize) != 0)
    user_error(
        "artifact '{}' fails its SHA-256 digest check: the file is corrupt or was "
        "tampered with; copy it again or recompile the model",
        path);
  a.signature_ = h.is_signed() ? SignatureState::kSignedNotVerified : SignatureState::kUnsigned;
  if (!keys.empty()) {
    const std::string trusted = fmt::format("{}", fmt::join(options.trusted_keys, ", "));
    if (!h.is_signed())
      user_error(
          "artifact '{}' is not signed, but only artifacts signed by a trusted key ({}) may "
          "load; compile it with --sign KEY.key",
          path, trusted);
    Signature sig;
    std::memcpy(sig.data(), data + h.digest_offset + kDigestSize, sig.size());
    for (size_t i = 0; i < keys.size() && a.verified_key_.empty(); ++i)
      if (verify_digest(digest, sig, keys[i])) a.verified_key_ = options.trusted_keys[i];
    if (a.verified_key_.empty())
      user_error(
          "artifact '{}' has a bad signature: no trusted key ({}) verifies it (signed with "
          "another key, or tampered with); do not use it",
          path, trusted);
    a.signature_ = SignatureState::kVerified;
  }

  const char* text = reinterpret_cast<const char*>(data + h.manifest_offset);
  const nlohmann::json j = parse_manifest_text({text, h.manifest_size}, path);
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

std::string Artifact::signature_text() const {
  switch (signature_) {
    case SignatureState::kUnsigned: return "unsigned";
    case SignatureState::kSignedNotVerified: return "signed, not verified";
    case SignatureState::kVerified: return "verified with " + verified_key_;
  }
  return "unsigned";
}

std::span<const std::byte> Artifact::blob(const std::string& name) const {
  const BlobEntry* b = manifest_.find_blob(name);
  if (!b)
    user_error(
        "artifact '{}' has no blob '{}'; it was compiled by an incompatible yoloc: "
        "recompile the model",
        path_, name);
  return {mem_->data + header_.blobs_offset + b->offset, b->size};
}

}  // namespace yoloc::artifact
