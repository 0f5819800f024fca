#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "detect/decode.h"
#include "test_util.h"

using namespace yoloc;
using namespace yoloc::detect;
using yoloc::testing::error_of;

namespace {

void expect_box(const Box& b, float x1, float y1, float x2, float y2) {
  EXPECT_FLOAT_EQ(b.x1, x1);
  EXPECT_FLOAT_EQ(b.y1, y1);
  EXPECT_FLOAT_EQ(b.x2, x2);
  EXPECT_FLOAT_EQ(b.y2, y2);
}

}  // namespace

TEST(Decode, YoloV8ChannelMajorBestClass) {
  // (1, 4 + 2, 3): rows cx, cy, w, h, cls0, cls1; one column per anchor.
  const Tensor out = Tensor::from_vector<float>({1, 6, 3}, {10, 50, 100,  // cx
                                                            20, 50, 100,  // cy
                                                            4, 8, 10,     // w
                                                            6, 8, 20,     // h
                                                            0.1f, 0.2f, 0.5f, 0.9f, 0.2f, 0.3f});
  const auto dets = decode_head(Family::kYoloV8, out, 0.25f, 640, 640);
  ASSERT_EQ(dets.size(), 2u);  // anchor 1's best score 0.2 is under 0.25
  expect_box(dets[0].box, 8, 17, 12, 23);
  EXPECT_EQ(dets[0].class_id, 1);
  EXPECT_FLOAT_EQ(dets[0].score, 0.9f);
  expect_box(dets[1].box, 95, 90, 105, 110);
  EXPECT_EQ(dets[1].class_id, 0);
}

TEST(Decode, YoloV5ScoreIsObjectnessTimesClass) {
  // (1, 2, 5 + 2): cx, cy, w, h, obj, cls0, cls1.
  const Tensor out =
      Tensor::from_vector<float>({1, 2, 7}, {10, 10, 4, 4, 0.5f, 0.6f, 0.2f,    // 0.30 > 0.25
                                             30, 30, 4, 4, 0.9f, 0.1f, 0.2f});  // 0.18
  const auto dets = decode_head(Family::kYoloV5, out, 0.25f, 640, 640);
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_FLOAT_EQ(dets[0].score, 0.3f);
  EXPECT_EQ(dets[0].class_id, 0);
  expect_box(dets[0].box, 8, 8, 12, 12);
}

TEST(Decode, YoloV5AcceptsFloat16) {
  const Tensor out =
      Tensor::from_vector<float>({1, 1, 6}, {16, 16, 8, 8, 1.0f, 0.5f}).cast(DType::kFloat16);
  const auto dets = decode_head(Family::kYoloV5, out, 0.25f, 640, 640);
  ASSERT_EQ(dets.size(), 1u);
  expect_box(dets[0].box, 12, 12, 20, 20);
}

TEST(Decode, YoloxRawGrid) {
  // Input 64x64: 8x8 cells at stride 8, 4x4 at 16, 2x2 at 32 = 84 rows. Row 64 + 2 * 4 + 1 is
  // stride 16, gx = 1, gy = 2: cx = (0.5 + 1) * 16 = 24, cy = (0.25 + 2) * 16 = 36,
  // w = e^ln2 * 16 = 32, h = e^0 * 16 = 16.
  Tensor out(DType::kFloat32, {1, 84, 7});
  float* p = out.data<float>() + 73 * 7;
  const float row[7] = {0.5f, 0.25f, std::log(2.0f), 0.0f, 0.8f, 0.1f, 0.5f};
  std::copy(row, row + 7, p);
  const auto dets = decode_head(Family::kYoloX, out, 0.25f, 64, 64);
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_EQ(dets[0].class_id, 1);
  EXPECT_FLOAT_EQ(dets[0].score, 0.4f);
  EXPECT_NEAR(dets[0].box.x1, 8, 1e-4);
  EXPECT_NEAR(dets[0].box.y1, 28, 1e-4);
  EXPECT_NEAR(dets[0].box.x2, 40, 1e-4);
  EXPECT_NEAR(dets[0].box.y2, 44, 1e-4);
}

TEST(Decode, YoloxRowCountMustMatchGrid) {
  const std::string msg = error_of([] {
    decode_head(Family::kYoloX, Tensor(DType::kFloat32, {1, 80, 7}), 0.25f, 64, 64);
  });
  EXPECT_NE(msg.find("84 grid cells"), std::string::npos) << msg;
}

TEST(Decode, YoloV10RowsAsTheyAre) {
  const Tensor out = Tensor::from_vector<float>(
      {1, 3, 6}, {1, 2, 30, 40, 0.9f, 5, 5, 5, 9, 9, 0.1f, 0, 0, 0, 10, 10, 0.3f, 2});
  const auto dets = decode_head(Family::kYoloV10, out, 0.25f, 640, 640);
  ASSERT_EQ(dets.size(), 2u);
  expect_box(dets[0].box, 1, 2, 30, 40);
  EXPECT_EQ(dets[0].class_id, 5);
  EXPECT_EQ(dets[1].class_id, 2);
}

TEST(Decode, WrongShapeNamesFamilyOption) {
  const std::string msg = error_of([] {
    decode_head(Family::kYoloV10, Tensor(DType::kFloat32, {1, 84, 8400}), 0.25f, 640, 640);
  });
  EXPECT_NE(msg.find("--family"), std::string::npos) << msg;
  EXPECT_THROW(decode_head(Family::kYoloV8, Tensor(DType::kInt32, {1, 84, 10}), 0.25f, 640, 640),
               UserError);
}

TEST(Decode, MapToImageUndoesLetterboxAndClips) {
  std::vector<Detection> dets = {{{100, 10, 700, 650}, 0.5f, 0}};
  map_to_image(dets, {0.5, 80, 0}, 1000, 1200);
  expect_box(dets[0].box, 40, 20, 1000, 1200);  // (700 - 80) / 0.5 = 1240 -> 1000
}
