#pragma once
/// Annotated images: box outlines in a per-class colour with a "name 0.87" label.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "detect/decode.h"
#include "yoloc/image.h"

namespace yoloc::detect {

/// The colour (B, G, R) for a class: the Ultralytics 20-colour palette, cycled.
std::array<uint8_t, 3> class_colour(int class_id);

/// Draws every detection (boxes in image pixels) onto `img`: an outline whose thickness grows
/// with the image size, and a filled label box with the class name and score above it (inside
/// the box when there is no room above). Everything is clipped to the image.
void draw_detections(Image& img, const std::vector<Detection>& dets,
                     const std::vector<std::string>& names);

}  // namespace yoloc::detect
