#pragma once
/// The binary layout of a `.ycm` file, shared by the writer and the reader:
///
///   [header, 64 bytes][manifest JSON][zero padding to 64][blobs, each 64-byte aligned]
///   [SHA-256 of everything before it, 32 bytes][Ed25519 signature of that digest, 64 bytes]?
///
/// All integers are little-endian. The signature is present when kFlagSigned is set.
#include <array>
#include <cstddef>
#include <cstdint>

namespace yoloc::artifact {

/// The first 8 bytes of every artifact.
inline constexpr std::array<char, 8> kMagic = {'Y', 'O', 'L', 'O', 'C', 'M', '\0', '\1'};
/// The newest format version this build writes and reads.
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kHeaderSize = 64;
/// Every blob starts at a multiple of this (file offset), so a mapping can be used in place.
inline constexpr size_t kBlobAlignment = 64;
inline constexpr size_t kDigestSize = 32;
inline constexpr size_t kSignatureSize = 64;
/// Header flag: an Ed25519 signature follows the digest.
inline constexpr uint32_t kFlagSigned = 1u << 0;

/// The fixed header at offset 0.
struct Header {
  uint32_t format_version = kFormatVersion;
  uint32_t flags = 0;
  uint64_t manifest_offset = kHeaderSize;
  uint64_t manifest_size = 0;
  uint64_t blobs_offset = 0;  ///< start of the blob section (a multiple of kBlobAlignment)
  uint64_t blobs_size = 0;
  uint64_t digest_offset = 0;  ///< the digest covers [0, digest_offset)
  uint64_t file_size = 0;      ///< total size, signature included

  bool is_signed() const { return (flags & kFlagSigned) != 0; }
};

/// Serializes h (with the magic) into the first kHeaderSize bytes of `out`.
void encode_header(const Header& h, std::byte* out);
/// Parses the kHeaderSize bytes at `in`; the caller has checked the magic.
Header decode_header(const std::byte* in);

/// x rounded up to a multiple of kBlobAlignment.
constexpr uint64_t align_up(uint64_t x) {
  return (x + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
}

}  // namespace yoloc::artifact
