#include <gtest/gtest.h>

#include <string>

#include "detect/preprocess.h"

using namespace yoloc;
using namespace yoloc::detect;

namespace {

/// A width x 1 image whose pixel x is (B, G, R) = bgr[x].
Image row_image(const std::vector<std::array<uint8_t, 3>>& bgr) {
  Image img(static_cast<int>(bgr.size()), 1);
  for (size_t x = 0; x < bgr.size(); ++x)
    for (int c = 0; c < 3; ++c) img.pixel(static_cast<int>(x), 0)[c] = bgr[x][c];
  return img;
}

float at(const Tensor& t, int c, int y, int x) {
  const Tensor f = t.dtype() == DType::kFloat32 ? t : t.cast(DType::kFloat32);
  return f.data<float>()[(c * t.dim(2) + y) * t.dim(3) + x];
}

}  // namespace

TEST(Letterbox, BusImageGeometry) {
  // 810x1080 into 640: r = 640/1080, new 480x640, dw = 80 -> left round(79.9) = 80.
  const LetterboxGeometry g = letterbox_geometry(810, 1080, 640, 640);
  EXPECT_DOUBLE_EQ(g.scale, 640.0 / 1080.0);
  EXPECT_EQ(g.new_w, 480);
  EXPECT_EQ(g.new_h, 640);
  EXPECT_EQ(g.left, 80);
  EXPECT_EQ(g.top, 0);
}

TEST(Letterbox, LandscapeAndOddPadding) {
  // 1280x720: r = 0.5, 640x360, dh = 140.
  LetterboxGeometry g = letterbox_geometry(1280, 720, 640, 640);
  EXPECT_EQ(g.new_h, 360);
  EXPECT_EQ(g.top, 140);
  EXPECT_EQ(g.left, 0);
  // 1000x333: r = 0.64, new_h = round(213.12) = 213, dh = 213.5 -> top round(213.4) = 213
  // (the bottom gets the extra row).
  g = letterbox_geometry(1000, 333, 640, 640);
  EXPECT_EQ(g.new_w, 640);
  EXPECT_EQ(g.new_h, 213);
  EXPECT_EQ(g.top, 213);
}

TEST(Letterbox, RoundsHalfToEvenLikePython) {
  // 10x5 into 5x5: r = 0.5, h * r = 2.5 -> Python round gives 2; dh = 1.5 -> top round(1.4) = 1.
  const LetterboxGeometry g = letterbox_geometry(10, 5, 5, 5);
  EXPECT_EQ(g.new_w, 5);
  EXPECT_EQ(g.new_h, 2);
  EXPECT_EQ(g.top, 1);
}

TEST(Letterbox, FractionalSizesMatchUltralytics) {
  // Ultralytics' LetterBox, computed by hand (Python): r = min(S/h, S/w),
  // new = (int(round(w*r)), int(round(h*r))), dw = (S - new_w)/2, left = int(round(dw - 0.1)),
  // top = int(round(dh - 0.1)). Scaled sizes with fractions above and below .5.
  struct Case {
    int w, h, s, new_w, new_h, left, top;
  };
  const Case cases[] = {
      {1000, 337, 640, 640, 216, 0, 212},  // h*r = 215.68 -> 216 (floor would give 215)
      {337, 1000, 640, 216, 640, 212, 0},  // w*r = 215.68 -> 216
      {333, 1000, 640, 213, 640, 213, 0},  // w*r = 213.12 -> 213; dw = 213.5 -> left 213
      {700, 1080, 416, 270, 416, 73, 0},   // w*r = 269.63 -> 270 (r = 416/1080)
      {701, 1000, 320, 224, 320, 48, 0},   // w*r = 224.32 -> 224
      {853, 1280, 320, 213, 320, 53, 0},   // w*r = 213.25 -> 213; dw = 53.5 -> left 53
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.w) + "x" + std::to_string(c.h) + " into " + std::to_string(c.s));
    const LetterboxGeometry g = letterbox_geometry(c.w, c.h, c.s, c.s);
    EXPECT_EQ(g.new_w, c.new_w);
    EXPECT_EQ(g.new_h, c.new_h);
    EXPECT_EQ(g.left, c.left);
    EXPECT_EQ(g.top, c.top);
  }
}

TEST(Letterbox, FractionalSizePlacesEveryImageRow) {
  // 1000x337 into 640: 216 image rows (215.68 rounded) from row 212 to 427, grey above and below.
  const Image out = letterbox(Image(1000, 337, 7), 640, 640);
  for (int y : {211, 212, 427, 428}) {
    SCOPED_TRACE(y);
    EXPECT_EQ(out.pixel(320, y)[1], (y >= 212 && y <= 427) ? 7 : 114);
  }
}

TEST(ResizeBilinear, UpscaleUsesHalfPixelCentres) {
  // cv2.resize([[0, 100]], (4, 1)) = [0, 25, 75, 100]: centres at -0.25 (clamped), 0.25, 0.75,
  // 1.25 (clamped).
  const Image out = resize_bilinear(row_image({{0, 0, 0}, {100, 100, 100}}), 4, 1);
  ASSERT_EQ(out.width, 4);
  EXPECT_EQ(out.pixel(0, 0)[0], 0);
  EXPECT_EQ(out.pixel(1, 0)[0], 25);
  EXPECT_EQ(out.pixel(2, 0)[0], 75);
  EXPECT_EQ(out.pixel(3, 0)[0], 100);
}

TEST(ResizeBilinear, DownscaleHasNoAntialias) {
  // 4 -> 2: centres 0.5 and 2.5 average neighbour pairs only.
  const Image out = resize_bilinear(row_image({{0, 0, 0}, {100, 0, 0}, {200, 0, 0}, {50, 0, 0}}),
                                    2, 1);
  EXPECT_EQ(out.pixel(0, 0)[0], 50);
  EXPECT_EQ(out.pixel(1, 0)[0], 125);
}

TEST(Preprocess, UltralyticsLetterboxTensor) {
  // 2x1 image into 4x4: r = 2, resized to 4x2, dh = 1 -> top 1, left 0. Horizontal weights
  // (1, 0), (.75, .25), (.25, .75), (0, 1); OpenCV's fixed point rounds 37.5 -> 38, 52.5 -> 53.
  const Image img = row_image({{10, 20, 30}, {40, 50, 60}});
  const Preprocessed p = preprocess_ultralytics(img, 4, 4, DType::kFloat32);
  ASSERT_EQ(p.input.shape(), (Shape{1, 3, 4, 4}));
  EXPECT_DOUBLE_EQ(p.transform.scale, 2.0);
  EXPECT_DOUBLE_EQ(p.transform.pad_left, 0.0);
  EXPECT_DOUBLE_EQ(p.transform.pad_top, 1.0);
  // Channel 0 is R after BGR -> RGB.
  const float want_r[4] = {30, 38, 53, 60};
  for (int y : {1, 2})
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(at(p.input, 0, y, x), want_r[x] / 255.0f);
  EXPECT_FLOAT_EQ(at(p.input, 2, 1, 0), 10 / 255.0f);  // B
  for (int y : {0, 3})
    for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(at(p.input, c, y, 2), 114 / 255.0f);
}

TEST(Preprocess, UltralyticsFloat16) {
  const Preprocessed p = preprocess_ultralytics(Image(8, 8, 255), 8, 8, DType::kFloat16);
  EXPECT_EQ(p.input.dtype(), DType::kFloat16);
  EXPECT_FLOAT_EQ(at(p.input, 1, 3, 3), 1.0f);
}

TEST(Preprocess, YoloxTopLeftBgrUnscaled) {
  // r = min(4/1, 4/2) = 2, resized to 4x2 at the top-left; rows 2-3 are padding.
  const Image img = row_image({{10, 20, 30}, {40, 50, 60}});
  const Preprocessed p = preprocess_yolox(img, 4, 4, DType::kFloat32);
  EXPECT_DOUBLE_EQ(p.transform.scale, 2.0);
  EXPECT_DOUBLE_EQ(p.transform.pad_top, 0.0);
  const float want_b[4] = {10, 18, 33, 40};  // 17.5 -> 18, 32.5 -> 33
  for (int y : {0, 1})
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(at(p.input, 0, y, x), want_b[x]);
  EXPECT_FLOAT_EQ(at(p.input, 2, 0, 0), 30.0f);  // channel 2 stays R
  EXPECT_FLOAT_EQ(at(p.input, 1, 3, 3), 114.0f);
}

TEST(Preprocess, YoloxTruncatesSize) {
  // 5x3 into 4x4: r = 0.8, int(3 * 0.8) = int(2.4) = 2 rows of image, rows 2-3 padding.
  const Preprocessed p = preprocess_yolox(Image(5, 3, 7), 4, 4, DType::kFloat32);
  EXPECT_FLOAT_EQ(at(p.input, 0, 1, 0), 7.0f);
  EXPECT_FLOAT_EQ(at(p.input, 0, 2, 0), 114.0f);
}

TEST(Preprocess, RejectsIntegerInput) {
  EXPECT_THROW(preprocess_ultralytics(Image(4, 4), 4, 4, DType::kUInt8), UserError);
}
