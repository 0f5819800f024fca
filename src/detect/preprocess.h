#pragma once
/// Pre-processing of images into network inputs: the Ultralytics letterbox and the YOLOX
/// (Megvii demo) top-left paste, plus the transform that maps boxes back to the image.
#include "yoloc/tensor.h"
#include "yoloc/image.h"

namespace yoloc::detect {

/// Maps a point from network-input pixels to original-image pixels:
/// x_image = (x_input - pad_left) / scale, y_image = (y_input - pad_top) / scale.
struct BoxTransform {
  double scale = 1.0;
  double pad_left = 0.0;
  double pad_top = 0.0;
};

/// A network input (1 x 3 x H x W) and how to map its boxes back.
struct Preprocessed {
  Tensor input;
  BoxTransform transform;
};

/// Where the Ultralytics letterbox puts an image of img_w x img_h in a dst_w x dst_h canvas.
struct LetterboxGeometry {
  double scale = 1.0;  ///< r = min(dst_h / img_h, dst_w / img_w)
  int new_w = 0;       ///< round(img_w * r), Python (half-to-even) rounding
  int new_h = 0;
  int left = 0;  ///< round(dw - 0.1) with dw = (dst_w - new_w) / 2
  int top = 0;   ///< round(dh - 0.1)
};

/// Bilinear resize with OpenCV's INTER_LINEAR semantics for 8-bit images: half-pixel centres,
/// edge clamping, no antialiasing, 11-bit fixed-point weights with a rounding shift.
Image resize_bilinear(const Image& src, int width, int height);

/// The letterbox placement (Ultralytics LetterBox with auto=False, scaleup=True, center=True).
LetterboxGeometry letterbox_geometry(int img_w, int img_h, int dst_w, int dst_h);

/// The letterboxed BGR image: resized to (new_w, new_h), padded with grey 114 to dst_w x dst_h.
Image letterbox(const Image& img, int dst_w, int dst_h, LetterboxGeometry* geometry = nullptr);

/// Ultralytics pre-processing: letterbox, BGR -> RGB, HWC -> CHW, / 255 in float32, then cast to
/// `dtype` (float32 or float16).
Preprocessed preprocess_ultralytics(const Image& img, int dst_w, int dst_h, DType dtype);

/// YOLOX (Megvii demo) pre-processing: r = min(dst_h / h, dst_w / w), resize to
/// (int(w * r), int(h * r)), paste at the top-left of a grey-114 canvas, keep BGR and 0..255
/// values, HWC -> CHW, cast to `dtype` (float32 or float16).
Preprocessed preprocess_yolox(const Image& img, int dst_w, int dst_h, DType dtype);

}  // namespace yoloc::detect
