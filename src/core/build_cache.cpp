#include "core/build_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <functional>
#include <span>
#include <sstream>
#include <thread>
#include <vector>

#include <sodium.h>

namespace yoloc {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMagic = "YOLOC-KC2\n";
constexpr const char* kSuffix = ".ykc";

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(std::string_view s, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

constexpr size_t kDigestSize = crypto_hash_sha256_BYTES;

std::string sha256_of(std::string_view s) {
  static const bool sodium_ready = sodium_init() >= 0;
  if (!sodium_ready) throw std::runtime_error("libsodium cannot be initialised");
  std::string d(kDigestSize, '\0');
  crypto_hash_sha256(reinterpret_cast<unsigned char*>(d.data()),
                     reinterpret_cast<const unsigned char*>(s.data()), s.size());
  return d;
}

constexpr size_t kHeader = kMagic.size() + 2 * 8 + kDigestSize;

/// What an entry file holds: kMagic, key size, payload size, the payload's SHA-256, key, payload.
std::string encode(std::string_view key, std::string_view payload) {
  std::string e(kMagic);
  put_u64(e, key.size());
  put_u64(e, payload.size());
  e.append(sha256_of(payload));
  e.append(key);
  e.append(payload);
  return e;
}

enum class Decoded { kHit, kOtherKey, kDamaged };

Decoded decode(std::string_view e, std::string_view key, std::string* payload) {
  if (e.size() < kHeader || e.substr(0, kMagic.size()) != kMagic) return Decoded::kDamaged;
  const uint64_t key_size = get_u64(e, kMagic.size());
  const uint64_t payload_size = get_u64(e, kMagic.size() + 8);
  if (key_size > e.size() - kHeader || payload_size != e.size() - kHeader - key_size)
    return Decoded::kDamaged;
  const std::string_view body = e.substr(kHeader + key_size);
  if (sha256_of(body) != e.substr(kMagic.size() + 16, kDigestSize))
    return Decoded::kDamaged;
  if (e.substr(kHeader, key_size) != key) return Decoded::kOtherKey;
  payload->assign(body);
  return Decoded::kHit;
}

bool read_file(const fs::path& p, std::string* out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = std::move(ss).str();
  return !f.bad();
}

}  // namespace

std::string build_key(std::initializer_list<std::string_view> parts) {
  std::string k;
  for (std::string_view p : parts) k.append(fmt::format("{}:", p.size())).append(p).push_back('\n');
  return k;
}

BuildCache::BuildCache(std::string dir, uint64_t max_bytes, bool reads)
    : dir_(std::move(dir)), max_bytes_(max_bytes), reads_(reads) {}

std::string BuildCache::default_dir() {
  if (const char* d = std::getenv("YOLOC_CACHE_DIR")) {
    const std::string s = d;
    return s == "off" ? std::string() : s;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "yoloc" / "kernels").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "yoloc" / "kernels").string();
  return {};
}

BuildCache& BuildCache::user() {
  static BuildCache cache(default_dir());
  return cache;
}

BuildCache& BuildCache::user_fill_only() {
  static BuildCache cache(default_dir(), kDefaultMaxBytes, /*reads=*/false);
  return cache;
}

std::string BuildCache::path_for(std::string_view key) const {
  const std::string h = fmt::format("{:016x}", fnv1a(key));
  return (fs::path(dir_) / h.substr(0, 2) / (h + kSuffix)).string();
}

void BuildCache::warn_once(const std::string& what) {
  if (warned_.exchange(true)) return;
  fmt::print(stderr,
             "warning: kernel build cache {}: {}; building without it (YOLOC_CACHE_DIR=<folder> "
             "puts it elsewhere, YOLOC_CACHE_DIR=off turns it off)\n",
             dir_, what);
}

std::string BuildCache::get_or_build(std::string_view key,
                                     const std::function<std::string()>& build, bool* hit) {
  if (hit) *hit = false;
  if (!enabled()) return build();
  const fs::path path = path_for(key);
  std::error_code ec;
  std::string entry;
  if (reads_ && fs::exists(path, ec) && read_file(path, &entry)) {
    std::string payload;
    switch (decode(entry, key, &payload)) {
      case Decoded::kHit:
        fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
        if (hit) *hit = true;
        return payload;
      case Decoded::kDamaged:
        fs::remove(path, ec);
        break;
      case Decoded::kOtherKey:
        break;
    }
  }
  std::string built = build();
  // Through a file of this process and thread, renamed into place: readers see the old entry
  // or the whole new one.
  const fs::path tmp = path.string() + fmt::format(".tmp{}-{:x}", getpid(),
                                                   std::hash<std::thread::id>{}(std::this_thread::get_id()));
  fs::create_directories(path.parent_path(), ec);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    const std::string e = encode(key, built);
    f.write(e.data(), static_cast<std::streamsize>(e.size()));
    f.close();
    if (!f) {
      fs::remove(tmp, ec);
      warn_once(fmt::format("cannot write {}", tmp.string()));
      return built;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    warn_once(fmt::format("cannot write {}", path.string()));
    return built;
  }
  written_ = true;
  return built;
}

void BuildCache::trim() {
  if (!enabled() || !written_.exchange(false)) return;
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != kSuffix) continue;
    const uint64_t bytes = it->file_size(ec);
    const fs::file_time_type used = it->last_write_time(ec);
    if (ec) continue;
    entries.push_back({it->path(), bytes, used});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  const uint64_t goal = max_bytes_ / 10 * 9;
  for (const Entry& e : entries) {
    if (total <= goal) break;
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
}

}  // namespace yoloc
