// The .ycm artifact: round trip, alignment, and every way the reader refuses a bad file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "artifact/artifact_reader.h"
#include "artifact/artifact_writer.h"
#include "core/error.h"

using namespace yoloc;
using namespace yoloc::artifact;
namespace fs = std::filesystem;

namespace {

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("yoloc_artifact_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static Manifest manifest() {
    Manifest m;
    m.tool_version = "0.1.0";
    m.family = "yolov8";
    m.target = "cpu";
    m.precision = "fp32";
    m.inputs = {{"images", "float32", {1, 3, 640, 640}}};
    m.outputs = {{"output0", "float32", {1, 84, 8400}}};
    m.class_names = {"person", "bicycle"};
    m.preprocess = {{"letterbox", 640}};
    m.memory_plan = {{"arena_bytes", 4096}};
    return m;
  }

  /// Blobs of awkward sizes, so padding between them is exercised.
  static std::vector<std::pair<std::string, std::string>> blobs() {
    std::string weights(1000, '\0'), kernels(77, '\0');
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<char>(i * 7);
    for (size_t i = 0; i < kernels.size(); ++i) kernels[i] = static_cast<char>(255 - i);
    return {{"weights", weights}, {"kernels.so", kernels}, {"empty", ""}, {"tail", "xyz"}};
  }

  std::string write(const std::string& name, const std::string& key_file = "") const {
    ArtifactWriter w(manifest());
    for (const auto& [n, bytes] : blobs())
      w.add_blob(n, n == "kernels.so" ? "kernel_so" : "raw", bytes);
    if (!key_file.empty()) w.sign_with_key_file(key_file);
    w.write(path(name));
    return path(name);
  }

  static std::string read_all(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static void write_all(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }

  /// The UserError message of opening `p`; fails the test when it opens.
  static std::string open_error(const std::string& p, const ReadOptions& o = {}) {
    try {
      Artifact::open(p, o);
    } catch (const UserError& e) {
      return e.what();
    }
    ADD_FAILURE() << "opening " << p << " succeeded";
    return "";
  }

  fs::path dir_;
};

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << "message: " << (msg)

}  // namespace

// Writers of one path at once (two compiles of the same output) each move a whole artifact into
// place under a temporary name of their own: every write succeeds, the file opens, and no
// temporary file is left.
TEST_F(ArtifactTest, ConcurrentWritersOfOnePathLeaveOneWholeArtifact) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        try {
          write("m.ycm");
        } catch (const UserError& e) {
          ++failures;
          ADD_FAILURE() << e.what();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Artifact::open(path("m.ycm")).manifest().family, "yolov8");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
}

TEST_F(ArtifactTest, RoundTripWithAlignedMappedBlobs) {
  const std::string p = write("m.ycm");
  const Artifact a = Artifact::open(p);
  const Manifest& m = a.manifest();
  EXPECT_EQ(m.family, "yolov8");
  EXPECT_EQ(m.target, "cpu");
  EXPECT_EQ(m.precision, "fp32");
  EXPECT_EQ(m.tool_version, "0.1.0");
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{1, 3, 640, 640}));
  EXPECT_EQ(m.outputs[0].name, "output0");
  EXPECT_EQ(m.class_names, (std::vector<std::string>{"person", "bicycle"}));
  EXPECT_EQ(m.preprocess.at("letterbox"), 640);
  EXPECT_EQ(m.memory_plan.at("arena_bytes"), 4096);
  ASSERT_EQ(m.blobs.size(), 4u);
  EXPECT_EQ(m.find_blob("kernels.so")->kind, "kernel_so");
  EXPECT_FALSE(a.signature_verified());
  for (const auto& [name, bytes] : blobs()) {
    const auto b = a.blob(name);
    ASSERT_EQ(b.size(), bytes.size()) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kBlobAlignment, 0u) << name;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), bytes) << name;
  }
  // File offsets are aligned too (the mapping starts page-aligned, so this is the same check
  // in file terms), and the layout matches the header.
  const std::string file = read_all(p);
  EXPECT_EQ(std::string(file.data(), 8), std::string("YOLOCM\0\1", 8));
  EXPECT_EQ(a.header().blobs_offset % kBlobAlignment, 0u);
  EXPECT_EQ(a.header().file_size, file.size());
  EXPECT_EQ(a.header().digest_offset + kDigestSize, file.size());
  EXPECT_THROW(a.blob("nope"), UserError);
}

TEST_F(ArtifactTest, DuplicateBlobNamesAreRefused) {
  ArtifactWriter w(manifest());
  w.add_blob("w", "raw", "1");
  EXPECT_THROW(w.add_blob("w", "raw", "2"), UserError);
}

TEST_F(ArtifactTest, MissingEmptyAndDirectoryAreRefused) {
  EXPECT_HAS(open_error(path("absent.ycm")), "cannot open artifact");
  write_all(path("empty.ycm"), "");
  EXPECT_HAS(open_error(path("empty.ycm")), "is empty");
  EXPECT_HAS(open_error(dir_.string()), "not a regular file");
}

TEST_F(ArtifactTest, BadMagicIsNotAnArtifact) {
  write_all(path("x.ycm"), "\x08\x07 this is an onnx file, really");
  EXPECT_HAS(open_error(path("x.ycm")), "not a yoloc artifact");
  std::string bytes = read_all(write("m.ycm"));
  bytes[0] = 'Z';
  write_all(path("m.ycm"), bytes);
  EXPECT_HAS(open_error(path("m.ycm")), "not a yoloc artifact");
}

TEST_F(ArtifactTest, NewerFormatVersionIsRefused) {
  std::string bytes = read_all(write("m.ycm"));
  bytes[8] = static_cast<char>(kFormatVersion + 1);  // little-endian u32 after the magic
  write_all(path("m.ycm"), bytes);
  const std::string msg = open_error(path("m.ycm"));
  EXPECT_HAS(msg, "format version 2");
  EXPECT_HAS(msg, "update yoloc");
}

TEST_F(ArtifactTest, TruncationAnywhereIsRefused) {
  const std::string bytes = read_all(write("m.ycm"));
  for (size_t keep : {size_t{3}, size_t{8}, size_t{40}, size_t{64}, size_t{200}, bytes.size() / 2,
                      bytes.size() - kDigestSize, bytes.size() - 1}) {
    write_all(path("t.ycm"), bytes.substr(0, keep));
    EXPECT_HAS(open_error(path("t.ycm")), "truncated");
  }
}

TEST_F(ArtifactTest, CorruptBytesFailTheDigest) {
  const std::string p = write("m.ycm");
  const Artifact a = Artifact::open(p);
  const uint64_t in_blob = a.header().blobs_offset + a.manifest().find_blob("weights")->offset + 5;
  const uint64_t in_manifest = a.header().manifest_offset + 10;
  for (uint64_t at : {in_blob, in_manifest, a.header().digest_offset}) {
    std::string bytes = read_all(p);
    bytes[at] ^= 0x01;
    write_all(path("c.ycm"), bytes);
    EXPECT_HAS(open_error(path("c.ycm")), "digest");
  }
}

TEST_F(ArtifactTest, CorruptHeaderOffsetsAreRefused) {
  std::string bytes = read_all(write("m.ycm"));
  bytes[16 + 8] = static_cast<char>(bytes[16 + 8] + 1);  // manifest_size
  write_all(path("h.ycm"), bytes);
  EXPECT_HAS(open_error(path("h.ycm")), "is corrupt");
  bytes = read_all(path("m.ycm")) + "junk";
  write_all(path("h.ycm"), bytes);
  EXPECT_HAS(open_error(path("h.ycm")), "is corrupt");
}

TEST_F(ArtifactTest, Signatures) {
  generate_key_pair(path("k.sec"), path("k.pub"));
  generate_key_pair(path("other.sec"), path("other.pub"));
  const fs::perms others = fs::perms::group_all | fs::perms::others_all;
  EXPECT_EQ(fs::status(path("k.sec")).permissions() & others, fs::perms::none);
  const std::string signed_path = write("s.ycm", path("k.sec"));
  const std::string plain = write("p.ycm");

  const Artifact good = Artifact::open(signed_path, {{path("k.pub")}});
  EXPECT_TRUE(good.signature_verified());
  EXPECT_EQ(good.signature_text(), "verified with " + path("k.pub"));
  // Any one of several trusted keys will do; the one that verified is named.
  const Artifact either = Artifact::open(signed_path, {{path("other.pub"), path("k.pub")}});
  EXPECT_EQ(either.verified_key(), path("k.pub"));
  // No key trusted: the digest still holds, and the signature is reported unverified.
  const Artifact unchecked = Artifact::open(signed_path);
  EXPECT_FALSE(unchecked.signature_verified());
  EXPECT_EQ(unchecked.signature_text(), "signed, not verified");
  EXPECT_EQ(Artifact::open(plain).signature_text(), "unsigned");

  EXPECT_HAS(open_error(signed_path, {{path("other.pub")}}), "bad signature");
  EXPECT_HAS(open_error(plain, {{path("k.pub")}}), "is not signed");
  EXPECT_HAS(open_error(signed_path, {{std::string()}}), "empty path");

  std::string bytes = read_all(signed_path);
  bytes.back() ^= 0x40;  // inside the signature: the digest still holds
  write_all(path("bad.ycm"), bytes);
  EXPECT_HAS(open_error(path("bad.ycm"), {{path("k.pub")}}), "bad signature");
  EXPECT_EQ(Artifact::open(path("bad.ycm")).signature_text(), "signed, not verified");

  write_all(path("junk.pub"), "not hex\n");
  EXPECT_HAS(open_error(signed_path, {{path("junk.pub")}}), "public key file");
  EXPECT_HAS(open_error(signed_path, {{path("absent.pub")}}), "cannot read");
}

// A signed artifact whose manifest is edited and whose digest is recomputed (what anyone can
// do) keeps a signature over the old digest: refused.
TEST_F(ArtifactTest, ReDigestedEditsFailTheSignature) {
  generate_key_pair(path("k.sec"), path("k.pub"));
  const std::string original = read_all(write("s.ycm", path("k.sec")));
  const Header h = decode_header(reinterpret_cast<const std::byte*>(original.data()));
  std::string bytes = original;
  const size_t at = bytes.find("yolov8");
  ASSERT_LT(at, h.manifest_offset + h.manifest_size);
  bytes.replace(at, 6, "yolov5");
  const Digest d = sha256(std::as_bytes(std::span(bytes.data(), h.digest_offset)));
  bytes.replace(h.digest_offset, d.size(), reinterpret_cast<const char*>(d.data()), d.size());
  write_all(path("edited.ycm"), bytes);
  EXPECT_EQ(Artifact::open(path("edited.ycm")).manifest().family, "yolov5");  // digest holds
  EXPECT_HAS(open_error(path("edited.ycm"), {{path("k.pub")}}), "bad signature");
}

// The bytes used are the bytes verified: rewriting the file after it was opened changes
// nothing the Artifact hands out.
TEST_F(ArtifactTest, BlobsAreAPrivateCopy) {
  const std::string p = write("m.ycm");
  const Artifact a = Artifact::open(p);
  const std::span<const std::byte> weights = a.blob("weights");
  const std::vector<std::byte> before(weights.begin(), weights.end());
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);  // in place, no rename
    const std::string zeros(read_all(p).size(), '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  ASSERT_EQ(read_all(p)[0], '\0');
  EXPECT_EQ(std::vector<std::byte>(weights.begin(), weights.end()), before);
}

TEST_F(ArtifactTest, MalformedManifestsAreRefused) {
  write_all(path("j.ycm"), pack_artifact("{not json", "", std::nullopt));
  EXPECT_HAS(open_error(path("j.ycm")), "not valid JSON");

  nlohmann::json j = manifest_to_json(manifest());
  j.erase("target");
  write_all(path("f.ycm"), pack_artifact(j.dump(), "", std::nullopt));
  EXPECT_HAS(open_error(path("f.ycm")), "lacks the field 'target'");

  j = manifest_to_json(manifest());
  j["inputs"][0]["shape"] = "1x3";
  write_all(path("t.ycm"), pack_artifact(j.dump(), "", std::nullopt));
  EXPECT_HAS(open_error(path("t.ycm")), "'inputs[0].shape' is not an array");

  // Nested a million deep: refused while parsing, in one line, without exhausting the stack.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  write_all(path("deep.ycm"), pack_artifact(deep, "", std::nullopt));
  const std::string msg = open_error(path("deep.ycm"));
  EXPECT_HAS(msg, "nests deeper than");
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  // What yoloc itself writes stays well inside the depth cap.
  j = manifest_to_json(manifest());
  j["program"] = {{"calls", {{{"task", {{"config", {{"a", {1, 2}}}}}}}}}};
  write_all(path("ok.ycm"), pack_artifact(j.dump(), "", std::nullopt));
  EXPECT_NO_THROW(Artifact::open(path("ok.ycm")));
  // Larger than a manifest may be.
  write_all(path("big.ycm"),
            pack_artifact(std::string(kMaxManifestBytes + 1, ' '), "", std::nullopt));
  EXPECT_HAS(open_error(path("big.ycm")), "more than the");
}

TEST_F(ArtifactTest, BlobsOutsideTheSectionAreRefused) {
  Manifest m = manifest();
  m.blobs = {{"weights", "raw", 64, 100}};  // the section holds only 128 bytes
  write_all(path("b.ycm"),
            pack_artifact(manifest_to_json(m).dump(), std::string(128, 'w'), std::nullopt));
  EXPECT_HAS(open_error(path("b.ycm")), "lies outside");
  m.blobs = {{"weights", "raw", 3, 10}};  // unaligned
  write_all(path("u.ycm"),
            pack_artifact(manifest_to_json(m).dump(), std::string(128, 'w'), std::nullopt));
  EXPECT_HAS(open_error(path("u.ycm")), "aligned");
}
