#include "codegen/build_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "artifact/signing.h"
#include "codegen/cpu/host_compiler.h"

namespace yoloc::codegen {
namespace {
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "yoloc-cache-test-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
};

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  return out;
}

TEST(BuildCache, BuildsOnceThenHits) {
  TempDir t;
  BuildCache cache((t.path / "c").string());
  int builds = 0;
  const auto build = [&] { return std::string("cubin\0bytes", 11) + std::to_string(++builds); };
  bool hit = true;
  EXPECT_EQ(cache.get_or_build("key A", build, &hit), std::string("cubin\0bytes1", 12));
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.get_or_build("key A", build, &hit), std::string("cubin\0bytes1", 12));
  EXPECT_TRUE(hit);
  EXPECT_EQ(builds, 1);
  // Another key is another build, and both stay.
  EXPECT_EQ(cache.get_or_build("key B", build, &hit), std::string("cubin\0bytes2", 12));
  EXPECT_FALSE(hit);
  EXPECT_EQ(entries(t.path / "c").size(), 2u);
}

TEST(BuildCache, KeysFromPartsDoNotRunTogether) {
  EXPECT_NE(build_key({"ab", "c"}), build_key({"a", "bc"}));
  EXPECT_EQ(build_key({"ab", "c"}), build_key({"ab", "c"}));
}

TEST(BuildCache, AnEntryOfAnotherKeyAtTheSamePlaceIsAMiss) {
  // Two keys whose entries collide: simulated by renaming one key's entry to the other's file.
  TempDir t;
  BuildCache cache(t.path.string());
  cache.get_or_build("first", [] { return std::string("one"); });
  const fs::path first = entries(t.path).at(0);
  cache.get_or_build("second", [] { return std::string("two"); });
  fs::path second;
  for (const fs::path& p : entries(t.path))
    if (p != first) second = p;
  ASSERT_FALSE(second.empty());
  fs::copy_file(first, second, fs::copy_options::overwrite_existing);
  bool hit = true;
  EXPECT_EQ(cache.get_or_build("second", [] { return std::string("two again"); }, &hit),
            "two again");
  EXPECT_FALSE(hit);
}

TEST(BuildCache, DamagedEntriesAreRebuiltAndReplaced) {
  TempDir t;
  BuildCache cache(t.path.string());
  const std::string payload(4096, 'k');
  cache.get_or_build("k", [&] { return payload; });
  const fs::path entry = entries(t.path).at(0);
  const auto size = fs::file_size(entry);
  for (const char* damage : {"flip", "truncate", "empty"}) {
    SCOPED_TRACE(damage);
    if (std::string(damage) == "flip") {
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size - 100));
      f.put('X');
    } else {
      fs::resize_file(entry, std::string(damage) == "empty" ? 0 : size / 2);
    }
    int builds = 0;
    bool hit = true;
    EXPECT_EQ(cache.get_or_build("k", [&] { ++builds; return payload; }, &hit), payload);
    EXPECT_FALSE(hit);
    EXPECT_EQ(builds, 1);
    EXPECT_EQ(fs::file_size(entry), size);  // a whole entry again
    cache.get_or_build("k", [&] { ++builds; return payload; }, &hit);
    EXPECT_TRUE(hit);
  }
}

// An entry carries its payload's SHA-256 (not a 64-bit checksum one can forge by hand).
TEST(BuildCache, EntriesCarryThePayloadsSha256) {
  TempDir t;
  BuildCache cache(t.path.string());
  const std::string payload = "kernel bytes";
  cache.get_or_build("k", [&] { return payload; });
  std::ifstream in(entries(t.path).at(0), std::ios::binary);
  const std::string entry((std::istreambuf_iterator<char>(in)), {});
  const artifact::Digest d = artifact::sha256(std::as_bytes(std::span(payload.data(), payload.size())));
  EXPECT_NE(entry.find(std::string(reinterpret_cast<const char*>(d.data()), d.size())),
            std::string::npos);
}

// A build whose result gets signed never takes the cache's word: whoever can write the folder
// can also write a matching digest. A fill-only cache builds every time, and stores the build.
TEST(BuildCache, AFillOnlyCacheNeverReadsAndStillStores) {
  TempDir t;
  BuildCache cache(t.path.string());
  cache.get_or_build("k", [] { return std::string("poisoned"); });
  BuildCache fill_only(t.path.string(), BuildCache::kDefaultMaxBytes, /*reads=*/false);
  bool hit = true;
  EXPECT_EQ(fill_only.get_or_build("k", [] { return std::string("fresh"); }, &hit), "fresh");
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.get_or_build("k", [] { return std::string("other"); }, &hit), "fresh");
  EXPECT_TRUE(hit);
}

TEST(BuildCache, AFailedBuildStoresNothing) {
  TempDir t;
  BuildCache cache(t.path.string());
  EXPECT_THROW(cache.get_or_build("k", []() -> std::string { throw std::runtime_error("nvrtc"); }),
               std::runtime_error);
  EXPECT_TRUE(entries(t.path).empty());
  bool hit = true;
  EXPECT_EQ(cache.get_or_build("k", [] { return std::string("ok"); }, &hit), "ok");
  EXPECT_FALSE(hit);
}

TEST(BuildCache, DisabledCacheAlwaysBuilds) {
  BuildCache cache("");
  EXPECT_FALSE(cache.enabled());
  int builds = 0;
  cache.get_or_build("k", [&] { return std::to_string(++builds); });
  bool hit = true;
  EXPECT_EQ(cache.get_or_build("k", [&] { return std::to_string(++builds); }, &hit), "2");
  EXPECT_FALSE(hit);
}

TEST(BuildCache, AnUnwritableFolderWarnsOnceAndBuilds) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders";
  TempDir t;
  fs::permissions(t.path, fs::perms::owner_read | fs::perms::owner_exec);
  BuildCache cache((t.path / "c").string());
  testing::internal::CaptureStderr();
  EXPECT_EQ(cache.get_or_build("a", [] { return std::string("x"); }), "x");
  EXPECT_EQ(cache.get_or_build("b", [] { return std::string("y"); }), "y");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning: kernel build cache"), std::string::npos) << err;
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << err;
}

TEST(BuildCache, AFileWhereTheFolderShouldBeWarnsAndBuilds) {
  TempDir t;
  std::ofstream(t.path / "file") << "not a folder";
  BuildCache cache((t.path / "file" / "c").string());
  testing::internal::CaptureStderr();
  bool hit = true;
  EXPECT_EQ(cache.get_or_build("a", [] { return std::string("x"); }, &hit), "x");
  EXPECT_FALSE(hit);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("warning: kernel build cache"),
            std::string::npos);
}

TEST(BuildCache, TrimDropsTheLeastRecentlyUsed) {
  TempDir t;
  BuildCache cache(t.path.string(), 10'000);
  const std::string payload(3000, 'p');
  for (const char* k : {"old", "used", "new"}) cache.get_or_build(k, [&] { return payload; });
  // Ages: "old" and "used" an hour ago, then "used" hit now; "new" now.
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::path& p : entries(t.path)) fs::last_write_time(p, hour_ago);
  bool hit = false;
  cache.get_or_build("used", [&] { return payload; }, &hit);
  ASSERT_TRUE(hit);
  cache.trim();
  EXPECT_EQ(entries(t.path).size(), 3u) << "under its size: nothing dropped";
  cache.get_or_build("newest", [&] { return payload; });  // now 4 x ~3 KB > 10 KB
  cache.trim();
  EXPECT_EQ(entries(t.path).size(), 2u);
  for (const char* k : {"used", "newest"}) {
    cache.get_or_build(k, [&] { return std::string("rebuilt"); }, &hit);
    EXPECT_TRUE(hit) << k;
  }
  cache.get_or_build("old", [&] { return payload; }, &hit);
  EXPECT_FALSE(hit);
}

TEST(BuildCache, ConcurrentBuildsOfOneKeyAllGetItsBytes) {
  TempDir t;
  BuildCache cache(t.path.string());
  const std::string payload(1 << 20, 'z');
  std::vector<std::thread> threads;
  std::vector<std::string> got(8);
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = cache.get_or_build("same", [&] { return payload; }); });
  for (std::thread& th : threads) th.join();
  for (const std::string& g : got) EXPECT_EQ(g, payload);
  EXPECT_EQ(entries(t.path).size(), 1u) << "no temporary file left behind";
  bool hit = false;
  EXPECT_EQ(cache.get_or_build("same", [] { return std::string(); }, &hit), payload);
  EXPECT_TRUE(hit);
}

TEST(BuildCache, DefaultFolderFollowsTheEnvironment) {
  const char* saved = std::getenv("YOLOC_CACHE_DIR");
  const std::string keep = saved ? saved : "";
  const char* saved_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string keep_xdg = saved_xdg ? saved_xdg : "";
  setenv("YOLOC_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(BuildCache::default_dir(), "/some/where");
  setenv("YOLOC_CACHE_DIR", "off", 1);
  EXPECT_EQ(BuildCache::default_dir(), "");
  setenv("YOLOC_CACHE_DIR", "", 1);
  EXPECT_EQ(BuildCache::default_dir(), "");
  unsetenv("YOLOC_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(BuildCache::default_dir(), "/xdg/yoloc/kernels");
  unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME")) {
    EXPECT_EQ(BuildCache::default_dir(), (fs::path(home) / ".cache/yoloc/kernels").string());
  }
  if (saved) setenv("YOLOC_CACHE_DIR", keep.c_str(), 1);
  if (saved_xdg) setenv("XDG_CACHE_HOME", keep_xdg.c_str(), 1);
}

TEST(BuildCache, CompilerIdentityNamesTheCompilerAndResolvesNative) {
  cpu::HostCompilerOptions o;
  o.cxx = "c++";
  o.flags = {"-O3", "-march=native"};
  const std::string native = cpu::compiler_identity(o);
  EXPECT_NE(native.find("-march=native"), std::string::npos);
  EXPECT_NE(native.find("-march="), native.rfind("-march=")) << "the resolved -march too";
  o.flags = {"-O3", "-march=x86-64-v3"};
  EXPECT_NE(cpu::compiler_identity(o), native);
  o.flags = {"-O2", "-march=native"};
  EXPECT_NE(cpu::compiler_identity(o), native);
}

}  // namespace
}  // namespace yoloc::codegen
