#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "yoloc/image.h"
#include "test_util.h"

using namespace yoloc;
using namespace yoloc::detect;
using yoloc::testing::error_of;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() { return yoloc::testing::temp_dir("detect_image"); }

}  // namespace

TEST(Image, MissingFileNamesIt) {
  const std::string msg = error_of([] { read_image("/nonexistent/dir/bus.jpg"); });
  EXPECT_NE(msg.find("/nonexistent/dir/bus.jpg"), std::string::npos) << msg;
}

TEST(Image, NonImageFileGivesReason) {
  const fs::path p = temp_dir() / "notes.jpg";
  std::ofstream(p) << "this is not an image";
  const std::string msg = error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot decode"), std::string::npos) << msg;
}

TEST(Image, EmptyFileAndDirectory) {
  const fs::path d = temp_dir();
  std::ofstream(d / "empty.png").close();
  EXPECT_NE(error_of([&] { read_image((d / "empty.png").string()); }).find("empty"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_image(d.string()); }).find("directory"), std::string::npos);
}

TEST(Image, TruncatedPng) {
  Image img(5, 4, 9);
  const fs::path d = temp_dir();
  write_image((d / "full.png").string(), img);
  std::ifstream in(d / "full.png", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THROW(decode_image(bytes.substr(0, bytes.size() / 2), "half.png"), UserError);
}

TEST(Image, PngRoundTripKeepsBgrOrder) {
  Image img(3, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) {
      uint8_t* p = img.pixel(x, y);
      p[0] = static_cast<uint8_t>(10 * x), p[1] = static_cast<uint8_t>(100 + y), p[2] = 200;
    }
  const fs::path p = temp_dir() / "rt.png";
  write_image(p.string(), img);
  const Image back = read_image(p.string());
  ASSERT_EQ(back.width, 3);
  ASSERT_EQ(back.height, 2);
  EXPECT_EQ(back.bgr, img.bgr);
}

TEST(Image, JpegWriteAndRead) {
  const fs::path p = temp_dir() / "grey.JPG";
  write_image(p.string(), Image(16, 8, 128));
  const Image back = read_image(p.string());
  EXPECT_EQ(back.width, 16);
  EXPECT_EQ(back.height, 8);
  EXPECT_NEAR(back.pixel(5, 5)[1], 128, 2);
}

TEST(Image, UnsupportedOutputExtension) {
  const std::string msg =
      error_of([] { write_image((fs::temp_directory_path() / "x.gif").string(), Image(2, 2)); });
  EXPECT_NE(msg.find(".gif"), std::string::npos) << msg;
}

namespace {

uint32_t crc32(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/// A PNG signature and an IHDR chunk (its CRC right) declaring width x height RGB pixels, and no
/// pixel data.
std::string png_header(uint32_t width, uint32_t height) {
  std::string s("\x89PNG\r\n\x1a\n", 8);
  const auto be32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
  };
  be32(13);
  s += "IHDR";
  be32(width);
  be32(height);
  s += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit, RGB, deflate, no filter, no interlace
  be32(crc32(s.substr(12)));                     // over the chunk type and data
  return s;
}

}  // namespace

TEST(Image, FifoIsRefusedWithoutBlocking) {
  const fs::path p = temp_dir() / "pipe.jpg";
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  const std::string msg = error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
}

TEST(Image, DeviceIsRefusedWithoutReading) {
  const std::string msg = error_of([] { read_image("/dev/zero"); });
  EXPECT_NE(msg.find("character device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/dev/zero"), std::string::npos) << msg;
}

TEST(Image, HugeHeaderIsRefusedBeforeDecoding) {
  const std::string msg = error_of([] { decode_image(png_header(18000, 18000), "huge.png"); });
  EXPECT_NE(msg.find("18000x18000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("YOLOC_MAX_IMAGE_PIXELS"), std::string::npos) << msg;
  // Within the limit, the same header goes on to the decoder, which finds no pixel data.
  const std::string small = error_of([] { decode_image(png_header(64, 64), "small.png"); });
  EXPECT_EQ(small.find("YOLOC_MAX_IMAGE_PIXELS"), std::string::npos) << small;
}

TEST(Image, LimitsAreConfigurable) {
  const fs::path p = temp_dir() / "ten.png";
  write_image(p.string(), Image(10, 10, 7));
  const std::string pixels = error_of([&] { read_image(p.string(), {1 << 20, 99}); });
  EXPECT_NE(pixels.find("limit of 99 pixels"), std::string::npos) << pixels;
  const std::string bytes = error_of([&] { read_image(p.string(), {20, 1 << 20}); });
  EXPECT_NE(bytes.find("limit of 20 bytes"), std::string::npos) << bytes;
  EXPECT_EQ(read_image(p.string(), {1 << 20, 100}).width, 10);

  ::setenv("YOLOC_MAX_IMAGE_PIXELS", "99", 1);
  const std::string env = error_of([&] { read_image(p.string()); });
  ::setenv("YOLOC_MAX_IMAGE_PIXELS", "lots", 1);
  const std::string bad = error_of([] { image_limits_from_env(); });
  ::unsetenv("YOLOC_MAX_IMAGE_PIXELS");
  EXPECT_NE(env.find("limit of 99 pixels"), std::string::npos) << env;
  EXPECT_NE(bad.find("YOLOC_MAX_IMAGE_PIXELS='lots'"), std::string::npos) << bad;
  EXPECT_EQ(read_image(p.string()).height, 10);
}

TEST(Image, TruncatedJpeg) {
  const fs::path p = temp_dir() / "full.jpg";
  write_image(p.string(), Image(64, 48, 100));
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = bytes.substr(0, bytes.size() - 40);
  const std::string msg = error_of([&] { decode_image(cut, "cut.jpg"); });
  EXPECT_NE(msg.find("cannot decode image 'cut.jpg'"), std::string::npos) << msg;
}

/// A JPEG whose Huffman table declares 300 codes (at most 256 exist): stb_image 2.27 (Debian's
/// libstb) wrote and read past its 257-entry size table on it (found by image_decoder_fuzzer;
/// scripts/sanitize.sh reports the out-of-bounds index there). Refused with a one-line error.
TEST(Image, JpegHuffmanTableWithTooManyCodesIsRefused) {
  std::string dht("\xff\xd8\xff\xc4", 4);
  const int codes = 300;
  const int length = 2 + 1 + 16 + codes;
  dht.push_back(static_cast<char>(length >> 8));
  dht.push_back(static_cast<char>(length & 0xFF));
  dht.push_back('\x00');  // a DC table, number 0
  std::string counts(16, '\0');
  counts[15] = static_cast<char>(255);  // 255 codes of 16 bits ...
  counts[14] = static_cast<char>(codes - 255);  // ... and 45 of 15
  dht += counts + std::string(codes, '\x01') + "\xff\xd9";
  const std::string msg = error_of([&] { decode_image(dht, "dht.jpg"); });
  EXPECT_NE(msg.find("cannot decode image 'dht.jpg'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}
