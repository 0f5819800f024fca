#pragma once
/// What a detector finds: boxes in image pixels with a score and a class, per image.
#include <string>
#include <vector>

namespace yoloc::detect {

/// An axis-aligned box, corners in pixels (x2 >= x1 and y2 >= y1 for a valid box).
struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

struct Detection {
  Box box;
  float score = 0;
  int class_id = 0;
};

/// The detections of one image.
struct ImageResult {
  std::string image;  ///< the image's path
  int width = 0;
  int height = 0;
  std::vector<Detection> detections;
};

}  // namespace yoloc::detect
