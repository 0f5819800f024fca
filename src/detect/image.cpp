#include "yoloc/image.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

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

int64_t limit_from_env(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  if (errno != 0 || *end != '\0' || n <= 0)
    user_error("{}='{}' is not a positive integer (unset it for the default {})", name, v,
               fallback);
  return n;
}

/// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

ImageLimits image_limits_from_env() {
  ImageLimits l;
  l.max_bytes = limit_from_env("YOLOC_MAX_IMAGE_BYTES", l.max_bytes);
  l.max_pixels = limit_from_env("YOLOC_MAX_IMAGE_PIXELS", l.max_pixels);
  return l;
}

Image::Image(int w, int h, uint8_t fill)
    : width(w), height(h), bgr(static_cast<size_t>(w) * static_cast<size_t>(h) * 3, fill) {
  YOLOC_CHECK(w >= 0 && h >= 0, "negative image size {}x{}", w, h);
}

Image read_image(const std::string& path, const ImageLimits& limits) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) user_error("cannot read image '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) user_error("cannot read image '{}': {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    user_error("cannot read image '{}': it is {}, not an image file", path, file_kind(st.st_mode));
  if (st.st_size > limits.max_bytes)
    user_error("cannot read image '{}': {} bytes is above the image file limit of {} bytes (set "
               "YOLOC_MAX_IMAGE_BYTES to raise it)",
               path, static_cast<int64_t>(st.st_size), limits.max_bytes);
  // Reads what fstat announced, and no more: a file that grows meanwhile is cut at that size.
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(f.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) user_error("cannot read image '{}': {}", path, std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return decode_image(bytes, path, limits);
}

Image decode_image(const std::string& bytes, const std::string& what, const ImageLimits& limits) {
  if (bytes.empty()) user_error("cannot decode image '{}': the file is empty", what);
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes ||
      bytes.size() > static_cast<size_t>(INT32_MAX))
    user_error("cannot decode image '{}': {} bytes is above the image file limit of {} bytes "
               "(set YOLOC_MAX_IMAGE_BYTES to raise it)",
               what, bytes.size(), std::min<int64_t>(limits.max_bytes, INT32_MAX));
  int w = 0, h = 0, channels = 0;
  // The header alone gives the size: refuse a huge image before decoding a pixel of it.
  if (stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &channels) &&
      static_cast<int64_t>(w) * h > limits.max_pixels)
    user_error("cannot decode image '{}': it is {}x{} ({} pixels), above the image limit of {} "
               "pixels (set YOLOC_MAX_IMAGE_PIXELS to raise it)",
               what, w, h, static_cast<int64_t>(w) * h, limits.max_pixels);
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
