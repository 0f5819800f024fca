#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "detect/draw.h"
#include "detect/pipeline.h"
#include "detect/result.h"

using namespace yoloc;
using namespace yoloc::detect;

namespace {

/// A v8 head (1, 4 + 2, 3) with two overlapping class-0 boxes and one class-1 box, in
/// network-input pixels.
Tensor fake_v8_head() {
  return Tensor::from_vector<float>({1, 6, 3}, {
      320, 322, 100,  // cx
      320, 320, 400,  // cy
      100, 100, 20,   // w
      50, 50, 20,     // h
      0.9f, 0.8f, 0.0f,
      0.0f, 0.0f, 0.6f});
}

}  // namespace

TEST(Detector, LetterboxNetworkNmsAndMapBack) {
  Shape seen;
  Detector d(
      [&](const Tensor& x) {
        seen = x.shape();
        return std::vector<Tensor>{fake_v8_head()};
      },
      DetectorConfig{});
  // 1280x720 into 640: scale 0.5, top pad 140.
  const auto dets = d.detect(Image(1280, 720, 50));
  EXPECT_EQ(seen, (Shape{1, 3, 640, 640}));
  ASSERT_EQ(dets.size(), 2u);  // the 0.8 box is suppressed by the 0.9 one
  EXPECT_FLOAT_EQ(dets[0].score, 0.9f);
  EXPECT_FLOAT_EQ(dets[0].box.x1, 540);  // (320 - 50) / 0.5
  EXPECT_FLOAT_EQ(dets[0].box.y1, 310);  // (295 - 140) / 0.5
  EXPECT_FLOAT_EQ(dets[0].box.x2, 740);
  EXPECT_FLOAT_EQ(dets[0].box.y2, 410);
  EXPECT_EQ(dets[1].class_id, 1);
  EXPECT_FLOAT_EQ(dets[1].box.y1, 500);  // (390 - 140) / 0.5
}

TEST(Detector, BatchesImagesAndPadsTheLastBatch) {
  // A batch-3 network whose head item i holds one box at cx = 100 + 10 * (first pixel of item
  // i's input, 0..1): each image's detections must come from its own item.
  DetectorConfig c;
  c.batch = 3;
  std::vector<Shape> shapes;
  std::vector<float> padding;  // the first value of every input item past the images
  int runs = 0;
  Detector d(
      [&](const Tensor& x) {
        shapes.push_back(x.shape());
        const int64_t item = x.numel() / x.dim(0);
        Tensor head(DType::kFloat32, {x.dim(0), 6, 1});
        for (int64_t b = 0; b < x.dim(0); ++b) {
          const float v = x.data<float>()[b * item];
          float* h = head.data<float>() + b * 6;
          h[0] = 100 + 10 * v * 255;  // cx encodes the image's grey level
          h[1] = 320, h[2] = 20, h[3] = 20, h[4] = 0.9f, h[5] = 0.1f;
          if (runs == 1 && b >= 1) padding.push_back(v);
        }
        ++runs;
        return std::vector<Tensor>{head};
      },
      c);
  std::vector<Image> images;
  for (int i = 0; i < 4; ++i) images.emplace_back(640, 640, static_cast<uint8_t>(i + 1));
  StageTimes t;
  const auto dets = d.detect(images, &t);
  ASSERT_EQ(dets.size(), 4u);
  EXPECT_EQ(shapes, (std::vector<Shape>{{3, 3, 640, 640}, {3, 3, 640, 640}}));
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(dets[i].size(), 1u) << "image " << i;
    EXPECT_NEAR((dets[i][0].box.x1 + dets[i][0].box.x2) / 2, 100 + 10 * (i + 1), 1e-3)
        << "image " << i << " got another item's detections";
  }
  EXPECT_EQ(padding, (std::vector<float>{0.0f, 0.0f}));  // the last batch's two blank items
  EXPECT_GT(t.inference_ms, 0.0);
  // One image on a batch-3 network: padded too, the same detections as in the batch.
  const auto one = d.detect(images[2]);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_FLOAT_EQ(one[0].box.x1, dets[2][0].box.x1);
}

TEST(Detector, RejectsBadConfigAndEmptyOutputs) {
  auto none = [](const Tensor&) { return std::vector<Tensor>{}; };
  DetectorConfig c;
  c.input_dtype = DType::kInt8;
  EXPECT_THROW(Detector(none, c), UserError);
  c = DetectorConfig{};
  c.conf = 1.5f;
  EXPECT_THROW(Detector(none, c), UserError);
  EXPECT_THROW(Detector(none, DetectorConfig{}).detect(Image(8, 8)), UserError);
}

TEST(Result, JsonFormat) {
  const ImageResult r{"bus.jpg", 810, 1080, {{{1, 2, 3, 4}, 0.5f, 5}, {{0, 0, 1, 1}, 0.25f, 99}}};
  const nlohmann::json j =
      to_json(r, {"person", "bicycle", "car", "motorcycle", "airplane", "bus"});
  EXPECT_EQ(j["image"], "bus.jpg");
  EXPECT_EQ(j["width"], 810);
  EXPECT_EQ(j["detections"][0]["class_name"], "bus");
  EXPECT_EQ(j["detections"][0]["box"], nlohmann::json({1.0, 2.0, 3.0, 4.0}));
  EXPECT_DOUBLE_EQ(j["detections"][0]["score"].get<double>(), 0.5);
  EXPECT_EQ(j["detections"][1]["class_name"], "class99");
}

TEST(Draw, OutlinesInClassColourAndClipsToImage) {
  Image img(200, 100, 0);
  const std::vector<Detection> dets = {{{20, 40, 120, 90}, 0.87f, 5},
                                       {{-50, -50, 500, 500}, 0.3f, 1},
                                       {{199, 99, 199, 99}, 0.3f, 2},
                                       {{NAN, 0, 1e30f, 5}, 0.2f, 3}};
  draw_detections(img, dets, {"a", "b", "c", "d", "e", "bus"});
  const auto c = class_colour(5);
  const uint8_t* p = img.pixel(60, 89);  // on the bottom edge of the bus box
  EXPECT_EQ(p[0], c[0]);
  EXPECT_EQ(p[1], c[1]);
  EXPECT_EQ(p[2], c[2]);
  const uint8_t* inside = img.pixel(70, 70);
  EXPECT_EQ(inside[0] + inside[1] + inside[2], 0);  // the box is an outline, not filled
}
