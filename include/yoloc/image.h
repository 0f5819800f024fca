#pragma once
/// 8-bit colour images: decoding (JPEG, PNG, BMP) and encoding (PNG, JPEG).
#include <cstdint>
#include <string>
#include <vector>

namespace yoloc::detect {

/// An 8-bit, 3-channel image, rows top to bottom, pixels interleaved in **BGR** order (as
/// OpenCV's imread, so that the models' pre-processing reads like its Python original).
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> bgr;  ///< width * height * 3 bytes

  Image() = default;
  /// A width x height image filled with the grey level `fill`.
  Image(int width, int height, uint8_t fill = 0);

  bool empty() const { return width == 0 || height == 0; }
  uint8_t* pixel(int x, int y) { return &bgr[(static_cast<size_t>(y) * width + x) * 3]; }
  const uint8_t* pixel(int x, int y) const {
    return &bgr[(static_cast<size_t>(y) * width + x) * 3];
  }
};

/// What an image may cost before it is decoded. A file larger than `max_bytes`, or a header
/// that declares more than `max_pixels` pixels, is refused (a UserError naming the limit) before
/// any pixel is decoded: a few hundred KB of PNG can declare gigabytes of pixels.
struct ImageLimits {
  int64_t max_bytes = int64_t{256} << 20;        ///< file size
  int64_t max_pixels = int64_t{8192} * 8192;     ///< width * height
};

/// The default limits, overridden by the environment variables YOLOC_MAX_IMAGE_BYTES and
/// YOLOC_MAX_IMAGE_PIXELS (positive integers; anything else is a UserError).
ImageLimits image_limits_from_env();

/// Decodes an image file: JPEG (libjpeg-turbo; a CMYK JPEG is refused), PNG (libpng; 16 bits cut
/// to 8, alpha dropped, no gamma correction) or BMP (stb_image); grey, palette and alpha images
/// become 3-channel. Corrupt or truncated data is an error, never a partly grey image. Only a
/// regular file is read (a FIFO, a device or a directory is refused at once, without blocking or
/// reading). Raises a UserError naming the file and the reason for a missing, unreadable,
/// oversized or non-image file.
Image read_image(const std::string& path, const ImageLimits& limits = image_limits_from_env());

/// Decodes an image held in memory; `what` names it in error messages.
Image decode_image(const std::string& bytes, const std::string& what,
                   const ImageLimits& limits = image_limits_from_env());

/// Writes `img` as PNG, or as JPEG (quality 95) when the name ends in .jpg or .jpeg (any case).
/// Raises a UserError for another extension or when the file cannot be written.
void write_image(const std::string& path, const Image& img);

}  // namespace yoloc::detect
