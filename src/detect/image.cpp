#include "yoloc/image.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "core/error.h"

// The stb headers are third-party code that the project's warning flags were not written for.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
// stb_image decodes BMP only: JPEG and PNG go through libjpeg-turbo and libpng (maintained,
// fuzzed decoders; stb_image's JPEG Huffman table reader indexes past its tables on a crafted
// DHT segment).
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_BMP
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

// uint64_t: a PNG header declares up to 2^32-1 by 2^32-1, whose product still fits.
void check_pixels(const std::string& what, uint64_t w, uint64_t h, const ImageLimits& limits) {
  if (w * h > static_cast<uint64_t>(limits.max_pixels))
    user_error("cannot decode image '{}': it is {}x{} ({} pixels), above the image limit of {} "
               "pixels (set YOLOC_MAX_IMAGE_PIXELS to raise it)",
               what, w, h, w * h, limits.max_pixels);
}

bool starts_with(const std::string& bytes, const char* magic, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

// --- JPEG (libjpeg-turbo) ------------------------------------------------------------------------

/// More scans than any encoder writes (a progressive JPEG has about 10): a crafted file with
/// thousands of tiny scans makes libjpeg redo the whole image per scan.
constexpr int kMaxJpegScans = 1000;

struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

/// Warnings (level -1) are corrupt data that libjpeg would paper over (a truncated file decodes
/// as grey): refused. Extraneous bytes before a marker are common and harmless: ignored.
void jpeg_message(j_common_ptr c, int level) {
  if (level == -1 && c->err->msg_code != JWRN_EXTRANEOUS_DATA) jpeg_fail(c);
}

void jpeg_progress(j_common_ptr c) {
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > kMaxJpegScans) {
    auto* e = reinterpret_cast<JpegError*>(c->err);
    std::snprintf(e->message, sizeof e->message, "more than %d scans", kMaxJpegScans);
    std::longjmp(e->jump, 1);
  }
}

Image decode_jpeg(const std::string& bytes, const std::string& what, const ImageLimits& limits) {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  jpeg_progress_mgr progress{};
  Image img;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  progress.progress_monitor = jpeg_progress;
  jpeg_create_decompress(&cinfo);
  struct Guard {
    jpeg_decompress_struct* c;
    ~Guard() { jpeg_destroy_decompress(c); }
  } guard{&cinfo};
  // Nothing with a destructor lives in the frames libjpeg jumps over.
  if (setjmp(err.jump)) user_error("cannot decode image '{}': JPEG: {}", what, err.message);
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  check_pixels(what, cinfo.image_width, cinfo.image_height, limits);
  cinfo.out_color_space = JCS_EXT_BGR;  // from grey or YCbCr; CMYK is refused by libjpeg
  jpeg_start_decompress(&cinfo);
  img = Image(static_cast<int>(cinfo.output_width), static_cast<int>(cinfo.output_height));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.pixel(0, static_cast<int>(cinfo.output_scanline));
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return img;
}

// --- PNG (libpng) --------------------------------------------------------------------------------

struct PngSource {
  const std::string& bytes;
  size_t pos = 0;
  char message[256] = {};
};

void png_fail(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof src->message, "%s", msg);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}

void png_read_bytes(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->bytes.size() - src->pos) png_error(png, "the file is truncated");
  std::memcpy(out, src->bytes.data() + src->pos, n);
  src->pos += n;
}

uint32_t be32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = at; i < at + 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

Image decode_png(const std::string& bytes, const std::string& what, const ImageLimits& limits) {
  // IHDR comes first (the PNG specification): its size is checked before libpng reads on.
  if (bytes.size() >= 24 && bytes.compare(12, 4, "IHDR") == 0)
    check_pixels(what, be32(bytes, 16), be32(bytes, 20), limits);
  PngSource src{bytes};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_warn);
  if (png == nullptr) user_error("cannot decode image '{}': out of memory", what);
  png_infop info = png_create_info_struct(png);
  struct Guard {
    png_structp* png;
    png_infop* info;
    ~Guard() { png_destroy_read_struct(png, info, nullptr); }
  } guard{&png, &info};
  if (info == nullptr) user_error("cannot decode image '{}': out of memory", what);
  Image img;
  std::vector<png_bytep> rows;
  // Nothing with a destructor lives in the frames libpng jumps over.
  if (setjmp(png_jmpbuf(png))) user_error("cannot decode image '{}': PNG: {}", what, src.message);
  png_set_read_fn(png, &src, png_read_bytes);
  png_read_info(png, info);
  const uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  check_pixels(what, w, h, limits);
  const int color = png_get_color_type(png, info);
  // 8-bit BGR as stb_image gave it: palettes expanded, 16 bits cut to their high byte, alpha
  // dropped (not blended), grey replicated, no gamma correction.
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA)
    png_set_gray_to_rgb(png);
  png_set_bgr(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * 3)
    png_error(png, "unsupported pixel format");
  img = Image(static_cast<int>(w), static_cast<int>(h));
  rows.resize(h);
  for (uint32_t y = 0; y < h; ++y) rows[y] = img.pixel(0, static_cast<int>(y));
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  return img;
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
  if (starts_with(bytes, "\xff\xd8\xff", 3)) return decode_jpeg(bytes, what, limits);
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n", 8)) return decode_png(bytes, what, limits);
  // BMP (stb_image, built for BMP only).
  int w = 0, h = 0, channels = 0;
  // The header alone gives the size: refuse a huge image before decoding a pixel of it.
  if (stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &channels))
    check_pixels(what, w, h, limits);
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
