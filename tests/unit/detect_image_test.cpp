#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "detect/image.h"
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
