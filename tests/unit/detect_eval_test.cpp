#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "detect/eval.h"
#include "test_util.h"

using namespace yoloc;
using namespace yoloc::detect;
namespace fs = std::filesystem;

namespace {

Detection det(Box b, float score, int cls = 0) { return {b, score, cls}; }
GroundTruth gt(Box b, int cls = 0) { return {b, cls}; }

fs::path temp_dir() { return yoloc::testing::temp_dir("detect_eval"); }

}  // namespace

TEST(Map, PerfectDetection) {
  const MapResult r = compute_map({{{det({0, 0, 10, 10}, 0.9f)}, {gt({0, 0, 10, 10})}}});
  EXPECT_DOUBLE_EQ(r.map50, 1.0);
  EXPECT_DOUBLE_EQ(r.map50_95, 1.0);
  EXPECT_EQ(r.classes, 1);
}

TEST(Map, IouDecidesThresholdsPassed) {
  // IoU 62 / 100 = 0.62: a hit at 0.50, 0.55, 0.60 and a miss at the 7 higher thresholds.
  const MapResult r = compute_map({{{det({0, 0, 100, 62}, 0.9f)}, {gt({0, 0, 100, 100})}}});
  EXPECT_DOUBLE_EQ(r.map50, 1.0);
  EXPECT_NEAR(r.map50_95, 0.3, 1e-12);
}

TEST(Map, InterpolatedPrecision101Points) {
  // Two objects; by score: hit, false positive, hit. Recall .5, .5, 1; precision 1, 1/2, 2/3,
  // made monotone: 1, 2/3, 2/3. Recall points 0.00..0.50 (51) read 1, 0.51..1.00 (50) read 2/3.
  const MapResult r = compute_map(
      {{{det({0, 0, 10, 10}, 0.9f), det({50, 50, 60, 60}, 0.8f), det({20, 0, 30, 10}, 0.7f)},
        {gt({0, 0, 10, 10}), gt({20, 0, 30, 10})}}});
  EXPECT_NEAR(r.map50, (51.0 + 50.0 * 2.0 / 3.0) / 101.0, 1e-12);
}

TEST(Map, ScoreOrderAcrossImages) {
  // The false positive of image 2 outranks the hit of image 1: precision 0 then 1/2 -> 1/2 at
  // every recall point.
  const MapResult r = compute_map(
      {{{det({0, 0, 10, 10}, 0.5f)}, {gt({0, 0, 10, 10})}}, {{det({0, 0, 10, 10}, 0.9f)}, {}}});
  EXPECT_NEAR(r.map50, 0.5, 1e-12);
}

TEST(Map, MatchesHighestIouUnmatchedGroundTruth) {
  // The first detection overlaps both objects (IoU 1 with B, 8/12 with A) and must take B, so
  // that the second one takes A exactly: all hits at every threshold. Taking the first object
  // would leave the second detection an IoU of 8/12 with B (a miss above 0.65).
  const MapResult r = compute_map({{{det({2, 0, 12, 10}, 0.9f), det({0, 0, 10, 10}, 0.8f)},
                                    {gt({0, 0, 10, 10}), gt({2, 0, 12, 10})}}});
  EXPECT_DOUBLE_EQ(r.map50_95, 1.0);
}

TEST(Map, OneDetectionMatchesOneObject) {
  // Two detections of one object: the second is a false positive after the hit; AP stays 1.
  const MapResult r =
      compute_map({{{det({0, 0, 10, 10}, 0.9f), det({0, 0, 10, 10}, 0.8f)}, {gt({0, 0, 10, 10})}}});
  EXPECT_DOUBLE_EQ(r.map50, 1.0);
  // Reversed scores of a good and a bad box of the same object: precision 0, 1/2 -> AP 1/2.
  const MapResult r2 =
      compute_map({{{det({0, 0, 10, 10}, 0.5f), det({0, 0, 10, 3}, 0.9f)}, {gt({0, 0, 10, 10})}}});
  EXPECT_NEAR(r2.map50, 0.5, 1e-12);
}

TEST(Map, AveragesOverClassesWithGroundTruth) {
  // Class 0 found (AP 1), class 1 missed (AP 0), class 2 has detections but no ground truth
  // (not averaged).
  const MapResult r = compute_map({{{det({0, 0, 10, 10}, 0.9f, 0), det({0, 0, 5, 5}, 0.9f, 2)},
                                    {gt({0, 0, 10, 10}, 0), gt({20, 20, 30, 30}, 1)}}});
  EXPECT_EQ(r.classes, 2);
  EXPECT_DOUBLE_EQ(r.map50, 0.5);
}

TEST(Map, ClassMustMatch) {
  const MapResult r = compute_map({{{det({0, 0, 10, 10}, 0.9f, 1)}, {gt({0, 0, 10, 10}, 0)}}});
  EXPECT_DOUBLE_EQ(r.map50, 0.0);
  EXPECT_DOUBLE_EQ(compute_map({}).map50, 0.0);
}

TEST(Labels, ReadsNormalisedBoxes) {
  const fs::path p = temp_dir() / "a.txt";
  std::ofstream(p) << "3 0.5 0.25 0.2 0.5\n\n0 0.1 0.1 0.2 0.2\n";
  const auto g = read_yolo_labels(p.string(), 200, 100);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].class_id, 3);
  EXPECT_FLOAT_EQ(g[0].box.x1, 80);
  EXPECT_FLOAT_EQ(g[0].box.y1, 0);
  EXPECT_FLOAT_EQ(g[0].box.x2, 120);
  EXPECT_FLOAT_EQ(g[0].box.y2, 50);
}

TEST(Labels, MalformedLineNamesFileAndLine) {
  const fs::path p = temp_dir() / "bad.txt";
  std::ofstream(p) << "0 0.5 0.5 0.1 0.1\n1.5 0.5 0.5 0.1\n";
  try {
    read_yolo_labels(p.string(), 10, 10);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string() + ":2"), std::string::npos) << e.what();
  }
}

TEST(Dataset, ListsImagesSortedWithLabelPaths) {
  const fs::path d = temp_dir();
  fs::create_directories(d / "images");
  for (const char* f : {"b.jpg", "a.PNG", "notes.txt"}) std::ofstream(d / "images" / f) << "x";
  const auto s = list_dataset(d.string());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(fs::path(s[0].image).filename(), "a.PNG");
  EXPECT_EQ(s[0].labels, (d / "labels" / "a.txt").string());
  EXPECT_EQ(fs::path(s[1].image).filename(), "b.jpg");
  EXPECT_THROW(list_dataset((d / "nowhere").string()), UserError);
}
