#include "detect/image.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"

// The stb headers are third-party code that the project's warning flags were not written for.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#pragma GCC diagnostic pop

namespace yoloc::detect {

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

Image::Image(int w, int h, uint8_t fill)
    : width(w), height(h), bgr(static_cast<size_t>(w) * static_cast<size_t>(h) * 3, fill) {
  YOLOC_CHECK(w >= 0 && h >= 0, "negative image size {}x{}", w, h);
}

Image read_image(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    user_error("cannot read image '{}': it is a directory, not an image file", path);
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("cannot read image '{}': {}", path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) user_error("cannot read image '{}': read error", path);
  return decode_image(bytes, path);
}

Image decode_image(const std::string& bytes, const std::string& what) {
  if (bytes.empty()) user_error("cannot decode image '{}': the file is empty", what);
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    user_error("cannot decode image '{}': {} bytes is too large", what, bytes.size());
  int w = 0, h = 0, channels = 0;
  stbi_uc* rgb = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                                       static_cast<int>(bytes.size()), &w, &h, &channels, 3);
  if (rgb == nullptr) {
    const char* reason = stbi_failure_reason();
    user_error("cannot decode image '{}': {} (expected a JPEG, PNG or BMP file)", what,
               reason ? reason : "unknown error");
  }
  Image img(w, h);
  const size_t n = static_cast<size_t>(w) * static_cast<size_t>(h);
  for (size_t i = 0; i < n; ++i) {
    img.bgr[3 * i + 0] = rgb[3 * i + 2];
    img.bgr[3 * i + 1] = rgb[3 * i + 1];
    img.bgr[3 * i + 2] = rgb[3 * i + 0];
  }
  stbi_image_free(rgb);
  return img;
}

void write_image(const std::string& path, const Image& img) {
  if (img.empty()) user_error("cannot write '{}': the image is empty", path);
  const std::string ext = lower_extension(path);
  const bool jpeg = ext == ".jpg" || ext == ".jpeg";
  if (!jpeg && ext != ".png")
    user_error("cannot write '{}': unsupported extension '{}' (use .png, .jpg or .jpeg)", path,
               ext);
  std::vector<uint8_t> rgb(img.bgr.size());
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    rgb[i + 0] = img.bgr[i + 2];
    rgb[i + 1] = img.bgr[i + 1];
    rgb[i + 2] = img.bgr[i + 0];
  }
  const int ok = jpeg ? stbi_write_jpg(path.c_str(), img.width, img.height, 3, rgb.data(), 95)
                      : stbi_write_png(path.c_str(), img.width, img.height, 3, rgb.data(),
                                       img.width * 3);
  if (!ok) user_error("cannot write image '{}': {}", path, std::strerror(errno));
}

}  // namespace yoloc::detect
