#include <gtest/gtest.h>

#include "core/error.h"
#include "detect/family.h"
#include "test_util.h"

using namespace yoloc;
using namespace yoloc::detect;
using yoloc::testing::error_of;

namespace {

const Metadata kYoloV8Meta = {
    {"author", "Ultralytics"}, {"description", "Ultralytics YOLOv8n model trained on coco.yaml"},
    {"task", "detect"},        {"stride", "32"},
    {"imgsz", "[640, 640]"},   {"names", "{0: 'person', 1: 'bicycle'}"},
    {"end2end", "False"}};

}  // namespace

TEST(Names, PythonDictLiteral) {
  EXPECT_EQ(parse_names("{0: 'person', 1: 'bicycle', 2: 'traffic light'}"),
            (std::vector<std::string>{"person", "bicycle", "traffic light"}));
  // Keys in any order; repr switches to double quotes around an apostrophe.
  EXPECT_EQ(parse_names("{1: \"men's\", 0: 'a\\'b'}"), (std::vector<std::string>{"a'b", "men's"}));
  EXPECT_EQ(parse_names("{}"), std::vector<std::string>{});
}

TEST(Names, PythonListLiteral) {
  EXPECT_EQ(parse_names("['cat', 'dog']"), (std::vector<std::string>{"cat", "dog"}));
}

TEST(Names, MalformedLiteralsAreUserErrors) {
  for (const char* bad : {"{0: 'a', 1: 'b'", "{0: 'a', 2: 'b'}", "{0: 'a', 0: 'b'}",
                          "{-1: 'a', 1: 'b'}", "{0: person}", "person", "{0: 'a'} x", ""})
    EXPECT_THROW(parse_names(bad), UserError) << bad;
}

TEST(Names, ClassNamesFallBackToCoco) {
  EXPECT_EQ(class_names(kYoloV8Meta, 2)[1], "bicycle");
  const auto coco = class_names({}, 80);
  ASSERT_EQ(coco.size(), 80u);
  EXPECT_EQ(coco[0], "person");
  EXPECT_EQ(coco[79], "toothbrush");
  EXPECT_EQ(class_names({}, -1).size(), 80u);
  EXPECT_EQ(class_names({}, 3), (std::vector<std::string>{"class0", "class1", "class2"}));
}

TEST(Imgsz, ParsesListOrScalar) {
  EXPECT_EQ(metadata_imgsz({{"imgsz", "[320, 320]"}}), std::make_pair(320, 320));
  EXPECT_EQ(metadata_imgsz({{"imgsz", "[384, 640]"}}), std::make_pair(384, 640));
  EXPECT_EQ(metadata_imgsz({{"imgsz", "640"}}), std::make_pair(640, 640));
  EXPECT_EQ(metadata_imgsz({{"imgsz", "big"}}), std::nullopt);
  EXPECT_EQ(metadata_imgsz({{"imgsz", "[0, 640]"}}), std::nullopt);
  EXPECT_EQ(metadata_imgsz({}), std::nullopt);
}

TEST(Family, FromUltralyticsMetadata) {
  EXPECT_EQ(detect_family(kYoloV8Meta, {1, 84, 8400}), Family::kYoloV8);
  EXPECT_EQ(detect_family(kYoloV8Meta, {-1, -1, -1}), Family::kYoloV8);
  Metadata e2e = kYoloV8Meta;
  e2e["end2end"] = "True";
  EXPECT_EQ(detect_family(e2e, {1, 300, 6}), Family::kYoloV10);
  Metadata head = kYoloV8Meta;
  head.erase("end2end");
  head["head"] = "v10Detect";
  EXPECT_EQ(detect_family(head, {1, 300, 6}), Family::kYoloV10);
}

TEST(Family, YoloV5RepositoryMetadata) {
  // The yolov5 repository's export writes only stride and names.
  const Metadata md = {{"stride", "32"}, {"names", "{0: 'person'}"}};
  EXPECT_EQ(detect_family(md, {1, 25200, 85}), Family::kYoloV5);
}

TEST(Family, NoMetadataAsksForFamilyOption) {
  const std::string msg = error_of([] { detect_family({}, {1, 3549, 85}); });
  EXPECT_NE(msg.find("--family yolov5|yolov8|yolov10|yolox"), std::string::npos) << msg;
}

TEST(Family, OtherTasksAreRejected) {
  Metadata seg = kYoloV8Meta;
  seg["task"] = "segment";
  EXPECT_NE(error_of([&] {
              detect_family(seg, {1, 116, 8400});
            }).find("segment"),
            std::string::npos);
}

TEST(Family, ParseOptionNames) {
  EXPECT_EQ(parse_family("YOLO11"), Family::kYoloV8);
  EXPECT_EQ(parse_family("yolov10"), Family::kYoloV10);
  EXPECT_EQ(parse_family("yolox"), Family::kYoloX);
  EXPECT_EQ(family_name(parse_family("yolov5")), "yolov5");
  EXPECT_THROW(parse_family("yolov7"), UserError);
}
