#include "detect/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace yoloc::detect {

namespace {

constexpr int kCoefBits = 11;  // OpenCV's INTER_RESIZE_COEF_BITS
constexpr int kCoefOne = 1 << kCoefBits;
constexpr uint8_t kPadGrey = 114;

/// Source index and the two fixed-point weights of one output coordinate, as OpenCV computes
/// them: centre-aligned coordinate in float, then clamped so that edges replicate.
struct Tap {
  int index = 0;
  int w0 = kCoefOne;
  int w1 = 0;
};

std::vector<Tap> linear_taps(int src_size, int dst_size) {
  std::vector<Tap> taps(static_cast<size_t>(dst_size));
  const double scale = static_cast<double>(src_size) / dst_size;
  for (int d = 0; d < dst_size; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    if (s < 0) s = 0, f = 0.0f;
    if (s >= src_size - 1) s = src_size - 1, f = 0.0f;
    Tap& t = taps[static_cast<size_t>(d)];
    t.index = s;
    t.w0 = static_cast<int>(std::nearbyint((1.0f - f) * kCoefOne));
    t.w1 = static_cast<int>(std::nearbyint(f * kCoefOne));
  }
  return taps;
}

void check_size(const char* what, int w, int h) {
  if (w <= 0 || h <= 0) user_error("{}: target size {}x{} must be positive", what, w, h);
}

/// HWC uint8 -> 1x3xHxW tensor of `dtype`, optionally swapping B and R, divided by `divisor`
/// (a true float32 division, as numpy / torch do, not a multiplication by the reciprocal).
Tensor to_nchw(const Image& img, bool to_rgb, float divisor, DType dtype) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16)
    user_error("the model input has element type {}; only float32 and float16 inputs are "
               "supported for images",
               dtype_name(dtype));
  Tensor t(DType::kFloat32, {1, 3, img.height, img.width});
  float* out = t.data<float>();
  const size_t plane = static_cast<size_t>(img.width) * img.height;
  for (int c = 0; c < 3; ++c) {
    const int src_c = to_rgb ? 2 - c : c;
    float* o = out + c * plane;
    for (size_t i = 0; i < plane; ++i) o[i] = static_cast<float>(img.bgr[3 * i + src_c]) / divisor;
  }
  return dtype == DType::kFloat32 ? t : t.cast(dtype);
}

/// Copies `src` into `dst` with its top-left corner at (x0, y0); src must fit.
void paste(const Image& src, Image& dst, int x0, int y0) {
  YOLOC_CHECK(x0 >= 0 && y0 >= 0 && x0 + src.width <= dst.width && y0 + src.height <= dst.height,
              "paste {}x{} at ({}, {}) into {}x{}", src.width, src.height, x0, y0, dst.width,
              dst.height);
  for (int y = 0; y < src.height; ++y)
    std::memcpy(dst.pixel(x0, y0 + y), src.pixel(0, y), static_cast<size_t>(src.width) * 3);
}

}  // namespace

Image resize_bilinear(const Image& src, int width, int height) {
  check_size("resize", width, height);
  if (src.empty()) user_error("resize: the source image is empty");
  if (width == src.width && height == src.height) return src;
  const std::vector<Tap> xs = linear_taps(src.width, width);
  const std::vector<Tap> ys = linear_taps(src.height, height);
  // Horizontal pass per source row, kept in int as OpenCV does (values < 2^19).
  auto hresize = [&](int sy, std::vector<int>& row) {
    const uint8_t* s = src.pixel(0, sy);
    for (int x = 0; x < width; ++x) {
      const Tap& t = xs[static_cast<size_t>(x)];
      const int i0 = t.index * 3;
      const int i1 = std::min(t.index + 1, src.width - 1) * 3;
      for (int c = 0; c < 3; ++c) row[x * 3 + c] = s[i0 + c] * t.w0 + s[i1 + c] * t.w1;
    }
  };
  Image dst(width, height);
  std::vector<int> r0(static_cast<size_t>(width) * 3), r1(r0.size());
  int cached0 = -1, cached1 = -1;
  for (int y = 0; y < height; ++y) {
    const Tap& t = ys[static_cast<size_t>(y)];
    const int sy0 = t.index, sy1 = std::min(t.index + 1, src.height - 1);
    if (sy0 == cached1) {
      std::swap(r0, r1);
      std::swap(cached0, cached1);
    }
    if (sy0 != cached0) hresize(sy0, r0), cached0 = sy0;
    if (sy1 != cached1) hresize(sy1, r1), cached1 = sy1;
    uint8_t* d = dst.pixel(0, y);
    for (int i = 0; i < width * 3; ++i) {
      const int64_t v = static_cast<int64_t>(r0[i]) * t.w0 + static_cast<int64_t>(r1[i]) * t.w1;
      d[i] = static_cast<uint8_t>(
          std::clamp<int64_t>((v + (int64_t{1} << (2 * kCoefBits - 1))) >> (2 * kCoefBits), 0,
                              255));
    }
  }
  return dst;
}

LetterboxGeometry letterbox_geometry(int img_w, int img_h, int dst_w, int dst_h) {
  check_size("letterbox", dst_w, dst_h);
  if (img_w <= 0 || img_h <= 0) user_error("letterbox: the image is empty");
  LetterboxGeometry g;
  g.scale = std::min(static_cast<double>(dst_h) / img_h, static_cast<double>(dst_w) / img_w);
  // Python's round() rounds half to even, as nearbyint does in the default rounding mode.
  g.new_w = static_cast<int>(std::nearbyint(img_w * g.scale));
  g.new_h = static_cast<int>(std::nearbyint(img_h * g.scale));
  g.new_w = std::clamp(g.new_w, 1, dst_w);
  g.new_h = std::clamp(g.new_h, 1, dst_h);
  const double dw = (dst_w - g.new_w) / 2.0, dh = (dst_h - g.new_h) / 2.0;
  g.left = static_cast<int>(std::nearbyint(dw - 0.1));
  g.top = static_cast<int>(std::nearbyint(dh - 0.1));
  return g;
}

Image letterbox(const Image& img, int dst_w, int dst_h, LetterboxGeometry* geometry) {
  const LetterboxGeometry g = letterbox_geometry(img.width, img.height, dst_w, dst_h);
  Image out(dst_w, dst_h, kPadGrey);
  paste(resize_bilinear(img, g.new_w, g.new_h), out, g.left, g.top);
  if (geometry) *geometry = g;
  return out;
}

Preprocessed preprocess_ultralytics(const Image& img, int dst_w, int dst_h, DType dtype) {
  LetterboxGeometry g;
  const Image boxed = letterbox(img, dst_w, dst_h, &g);
  Preprocessed p;
  p.input = to_nchw(boxed, /*to_rgb=*/true, 255.0f, dtype);
  p.transform = {g.scale, static_cast<double>(g.left), static_cast<double>(g.top)};
  return p;
}

Preprocessed preprocess_yolox(const Image& img, int dst_w, int dst_h, DType dtype) {
  check_size("YOLOX pre-processing", dst_w, dst_h);
  if (img.empty()) user_error("YOLOX pre-processing: the image is empty");
  const double r =
      std::min(static_cast<double>(dst_h) / img.height, static_cast<double>(dst_w) / img.width);
  // Python's int() truncates; a degenerate 0 would make an empty resize.
  const int new_w = std::clamp(static_cast<int>(img.width * r), 1, dst_w);
  const int new_h = std::clamp(static_cast<int>(img.height * r), 1, dst_h);
  Image canvas(dst_w, dst_h, kPadGrey);
  paste(resize_bilinear(img, new_w, new_h), canvas, 0, 0);
  Preprocessed p;
  p.input = to_nchw(canvas, /*to_rgb=*/false, 1.0f, dtype);
  p.transform = {r, 0.0, 0.0};
  return p;
}

}  // namespace yoloc::detect
