#include <gtest/gtest.h>

#include "detect/nms.h"

using namespace yoloc::detect;

namespace {

Detection det(float x1, float y1, float x2, float y2, float score, int cls = 0) {
  return {{x1, y1, x2, y2}, score, cls};
}

}  // namespace

TEST(Iou, HandComputed) {
  // Overlap 1x1, union 4 + 4 - 1 = 7.
  EXPECT_FLOAT_EQ(iou({0, 0, 2, 2}, {1, 1, 3, 3}), 1.0f / 7.0f);
  EXPECT_FLOAT_EQ(iou({0, 0, 2, 2}, {2, 0, 4, 2}), 0.0f);  // touching edges
  EXPECT_FLOAT_EQ(iou({0, 0, 2, 2}, {0, 0, 2, 2}), 1.0f);
  EXPECT_FLOAT_EQ(iou({1, 1, 1, 1}, {1, 1, 1, 1}), 0.0f);  // empty union
}

TEST(Nms, SuppressesOverlapOfSameClassOnly) {
  const auto kept = nms({det(0, 0, 10, 10, 0.8f), det(1, 0, 11, 10, 0.9f),
                         det(0, 0, 10, 10, 0.7f, /*cls=*/1)},
                        0.45f, 300);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_FLOAT_EQ(kept[0].score, 0.9f);
  EXPECT_EQ(kept[1].class_id, 1);
}

TEST(Nms, ThresholdIsStrict) {
  // IoU of [0,0,10,10] and [0,0,10,5] is 50 / 100 = 0.5 exactly.
  EXPECT_EQ(nms({det(0, 0, 10, 10, 0.9f), det(0, 0, 10, 5, 0.8f)}, 0.5f, 300).size(), 2u);
  EXPECT_EQ(nms({det(0, 0, 10, 10, 0.9f), det(0, 0, 10, 5, 0.8f)}, 0.49f, 300).size(), 1u);
}

TEST(Nms, SuppressedBoxesDoNotSuppress) {
  // A overlaps B, B overlaps C, A and C are apart: B goes, C stays.
  const auto kept = nms({det(0, 0, 10, 10, 0.9f), det(5, 0, 15, 10, 0.8f),
                         det(10, 0, 20, 10, 0.7f)},
                        0.3f, 300);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_FLOAT_EQ(kept[0].box.x1, 0);
  EXPECT_FLOAT_EQ(kept[1].box.x1, 10);
}

TEST(Nms, EqualScoresKeepInputOrder) {
  const auto kept = nms({det(0, 0, 10, 10, 0.5f), det(1, 0, 11, 10, 0.5f),
                         det(50, 0, 60, 10, 0.5f)},
                        0.45f, 300);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_FLOAT_EQ(kept[0].box.x1, 0);  // the first of the tied pair wins
  EXPECT_FLOAT_EQ(kept[1].box.x1, 50);
}

TEST(Nms, CapsAtMaxDetByScore) {
  std::vector<Detection> in;
  for (int i = 0; i < 5; ++i) in.push_back(det(20.0f * i, 0, 20.0f * i + 10, 10, 0.1f * (i + 1)));
  const auto kept = nms(in, 0.45f, 3);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_FLOAT_EQ(kept[0].score, 0.5f);
  EXPECT_FLOAT_EQ(kept[2].score, 0.3f);
}

TEST(Nms, DropsNaNScores) {
  EXPECT_EQ(nms({det(0, 0, 1, 1, NAN), det(5, 5, 6, 6, 0.5f)}, 0.45f, 300).size(), 1u);
}
