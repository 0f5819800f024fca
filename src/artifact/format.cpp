#include "artifact/format.h"

#include <cstring>

namespace yoloc::artifact {

namespace {

template <typename T>
void put(std::byte*& p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) *p++ = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

template <typename T>
T get(const std::byte*& p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(std::to_integer<uint8_t>(*p++)) << (8 * i);
  return v;
}

}  // namespace

void encode_header(const Header& h, std::byte* out) {
  std::memset(out, 0, kHeaderSize);
  std::memcpy(out, kMagic.data(), kMagic.size());
  std::byte* p = out + kMagic.size();
  put(p, h.format_version);
  put(p, h.flags);
  put(p, h.manifest_offset);
  put(p, h.manifest_size);
  put(p, h.blobs_offset);
  put(p, h.blobs_size);
  put(p, h.digest_offset);
  put(p, h.file_size);
}

Header decode_header(const std::byte* in) {
  const std::byte* p = in + kMagic.size();
  Header h;
  h.format_version = get<uint32_t>(p);
  h.flags = get<uint32_t>(p);
  h.manifest_offset = get<uint64_t>(p);
  h.manifest_size = get<uint64_t>(p);
  h.blobs_offset = get<uint64_t>(p);
  h.blobs_size = get<uint64_t>(p);
  h.digest_offset = get<uint64_t>(p);
  h.file_size = get<uint64_t>(p);
  return h;
}

}  // namespace yoloc::artifact
