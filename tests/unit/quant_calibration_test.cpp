// Calibration inputs and files: the one-line errors of a bad folder or a file of another model,
// and a file read back as written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "quant/calibration_file.h"
#include "quant/calibration_images.h"

namespace yoloc::quant {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("yoloc-quant-test-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationImages, MissingEmptyAndImagelessFoldersAreOneLineErrors) {
  const fs::path d = temp_dir("images");
  std::string e = error_of([&] { list_calibration_images((d / "nope").string(), 0); });
  EXPECT_NE(e.find("no such folder"), std::string::npos) << e;
  e = error_of([&] { list_calibration_images(d.string(), 0); });
  EXPECT_NE(e.find("no .jpg"), std::string::npos) << e;
  std::ofstream(d / "notes.txt") << "x";
  e = error_of([&] { list_calibration_images(d.string(), 0); });
  EXPECT_NE(e.find("no .jpg"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
}

TEST(CalibrationImages, SortedByNameFirstNAndTheImagesSubfolder) {
  const fs::path d = temp_dir("sorted");
  fs::create_directories(d / "images");
  for (const char* n : {"c.jpg", "a.png", "b.JPG", "d.txt"}) std::ofstream(d / "images" / n) << "x";
  const auto all = list_calibration_images(d.string(), 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(fs::path(all[0]).filename(), "a.png");
  EXPECT_EQ(fs::path(all[2]).filename(), "c.jpg");
  EXPECT_EQ(list_calibration_images(d.string(), 2).size(), 2u);
}

TEST(CalibrationImages, AnUnreadableImageIsAUserError) {
  const fs::path d = temp_dir("broken");
  std::ofstream(d / "broken.jpg") << "not a jpeg";
  detect::DetectorConfig config;
  EXPECT_THROW(calibration_input((d / "broken.jpg").string(), config, DType::kFloat32),
               UserError);
}

Calibration small_calibration() {
  Calibration c;
  c.model_digest = "abc";
  c.model = "m.onnx";
  c.input_w = c.input_h = 64;
  c.folder = "imgs";
  c.images = 2;
  c.method = Method::kMse;
  c.convs = {{"y1", "x1", ""}, {"y0", "images", "stem (reads the image)"}};
  TensorStats s;
  const float v[] = {-0.25f, 1.0f, 3.0f};
  s.histogram.add(v, 3);
  s.channel_sums = {1.5, 3.0};
  s.per_channel = 3;
  c.tensors["x1"] = s;
  return c;
}

TEST(CalibrationFile, ReadsBackWhatItWrote) {
  const fs::path d = temp_dir("file");
  const std::string path = (d / "calib.json").string();
  write_calibration(small_calibration(), path);
  const Calibration c = read_calibration(path, "abc");
  EXPECT_EQ(c.method, Method::kMse);
  ASSERT_EQ(c.convs.size(), 2u);
  EXPECT_EQ(c.convs[1].float_reason, "stem (reads the image)");
  const TensorStats& s = c.tensors.at("x1");
  EXPECT_DOUBLE_EQ(s.histogram.max(), 3.0);
  EXPECT_DOUBLE_EQ(s.histogram.min(), -0.25);
  EXPECT_DOUBLE_EQ(s.histogram.total(), 3);
  EXPECT_EQ(s.channel_means(), (std::vector<double>{0.5, 1.0}));
}

TEST(CalibrationFile, AFileOfAnotherModelOrNoneIsAOneLineError) {
  const fs::path d = temp_dir("other");
  const std::string path = (d / "calib.json").string();
  write_calibration(small_calibration(), path);
  std::string e = error_of([&] { read_calibration(path, "def"); });
  EXPECT_NE(e.find("another model"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  std::ofstream(d / "junk.json") << "{\"format\": 1";
  e = error_of([&] { read_calibration((d / "junk.json").string(), "abc"); });
  EXPECT_NE(e.find("not JSON"), std::string::npos) << e;
  e = error_of([&] { read_calibration((d / "none.json").string(), "abc"); });
  EXPECT_NE(e.find("cannot read"), std::string::npos) << e;
}

}  // namespace
}  // namespace yoloc::quant
