#pragma once
/// The kernel build cache (in core: the compiler keeps built kernels in it, the runtime the
/// OpenCL program binaries it builds at load): built kernels (NVRTC cubins, the host compiler's shared objects) kept
/// on disk by the exact inputs of their build, so that compiling a model again, or another model
/// with the same kernels, skips NVRTC / the host compiler. What ccache does for C++ and
/// TensorRT's engine cache does for engines, for yoloc's generated kernels.
///
/// An entry is looked up by a hash of its key (everything the build depends on: the tool
/// version, the compiler and its version, the flags, the target, the source) and stores the whole
/// key: a hit is an entry whose stored key equals the asked one byte for byte, so a hash collision
/// is a miss, never a wrong kernel. The payload carries its SHA-256; a truncated or damaged entry
/// is a miss (and is removed), as is any entry written by another cache format.
///
/// A digest stored beside the payload catches damage, not a writer of the cache folder, who can
/// store a matching digest for any code: so a compile that signs its artifact never reads the
/// cache (user_fill_only()), and a signature vouches only for kernels this process built.
///
/// Where: $YOLOC_CACHE_DIR when set (set to "" or "off", no cache), else
/// $XDG_CACHE_HOME/yoloc/kernels, else ~/.cache/yoloc/kernels. Entries are written through a
/// temporary file and renamed, so concurrent compiles never see half an entry. A hit touches
/// its entry; trim() drops the least recently used ones while the cache is over its size. An
/// unreadable or unwritable cache costs one warning on stderr and the compile goes on without.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace yoloc {

class BuildCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = 2ull << 30;  ///< 2 GiB

  /// A cache in `dir` (created when first written); an empty dir is no cache. With `reads`
  /// false, get_or_build() always builds, and stores what it built.
  explicit BuildCache(std::string dir, uint64_t max_bytes = kDefaultMaxBytes, bool reads = true);

  /// The user's cache at the place the file comment gives (disabled when it says so). One
  /// instance per process.
  static BuildCache& user();
  /// The user's cache, written but never read: for builds whose result gets signed.
  static BuildCache& user_fill_only();
  /// The folder the user's cache is in per the environment, "" when disabled.
  static std::string default_dir();

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  /// The bytes of the build described by `key`: the cached ones when an entry for exactly this
  /// key is there (*hit = true), else build()'s, which are then stored. Thread-safe. build()'s
  /// exceptions pass through, and nothing is stored for them.
  std::string get_or_build(std::string_view key, const std::function<std::string()>& build,
                           bool* hit = nullptr);

  /// Removes the least recently used entries until the cache holds at most 90 % of its size,
  /// when it holds more than its size. Cheap when nothing was written since the last trim.
  void trim();

 private:
  std::string path_for(std::string_view key) const;
  void warn_once(const std::string& what);

  std::string dir_;
  uint64_t max_bytes_;
  bool reads_ = true;
  std::atomic<bool> written_{false};
  std::atomic<bool> warned_{false};
};

/// The build key from its parts: each part's length, then the part, so that no two lists of
/// parts make the same key.
std::string build_key(std::initializer_list<std::string_view> parts);

}  // namespace yoloc
