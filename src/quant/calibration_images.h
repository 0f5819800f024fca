#pragma once
/// The calibration images: a folder of images (or a dataset folder with images/), sorted by
/// name, each pre-processed as the model's own detector does (letterbox or the YOLOX paste).
#include <string>
#include <vector>

#include "yoloc/tensor.h"
#include "detect/pipeline.h"

namespace yoloc::quant {

/// The first `count` images (0: all) of DIR (or of DIR/images when that exists) by name. Raises
/// a one-line UserError for a missing or unreadable folder or one without images.
std::vector<std::string> list_calibration_images(const std::string& dir, int count);

/// The network input of one image (1 x 3 x H x W of `dtype`) by the family's pre-processing.
/// Raises a UserError naming an image that cannot be read.
Tensor calibration_input(const std::string& image, const detect::DetectorConfig& config,
                         DType dtype);

}  // namespace yoloc::quant
