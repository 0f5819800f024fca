#pragma once
/// Decoders of the detection heads: raw network output -> scored, classed boxes in network-input
/// pixels, and the mapping of those boxes back onto the original image.
#include <vector>

#include "yoloc/tensor.h"
#include "detect/family.h"
#include "detect/preprocess.h"
#include "yoloc/detection.h"

namespace yoloc::detect {

/// Intersection over union; 0 when the union is empty.
float iou(const Box& a, const Box& b);

/// Decodes batch item 0 of a head output (any float dtype). For the anchor-based heads (v5, v8,
/// YOLOX) each anchor gives at most one candidate, of its best class, kept when its score
/// passes `conf` (score > conf, YOLOX score >= conf, as the original post-processing does).
/// v10 rows are taken as they are (score > conf), in order. `input_w` / `input_h` are the network
/// input size (the YOLOX grid depends on them). Boxes are in network-input pixels. Raises a
/// UserError naming the expected layout when the output's shape does not fit the family.
std::vector<Detection> decode_head(Family family, const Tensor& output, float conf, int input_w,
                                   int input_h);

/// Maps boxes from network-input pixels to the image (see BoxTransform) and clips them to
/// [0, width] x [0, height].
void map_to_image(std::vector<Detection>& dets, const BoxTransform& t, int width, int height);

}  // namespace yoloc::detect
