#include "quant/calibration_images.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "detect/eval.h"
#include "yoloc/image.h"
#include "detect/preprocess.h"

namespace yoloc::quant {

namespace fs = std::filesystem;

std::vector<std::string> list_calibration_images(const std::string& dir, int count) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    user_error("--calibration {}: no such folder; give a folder of images like the model's "
               "inputs",
               dir);
  fs::path folder = dir;
  if (fs::is_directory(folder / "images", ec)) folder /= "images";
  std::vector<std::string> images;
  fs::directory_iterator it(folder, ec);
  if (ec)
    user_error("--calibration {}: cannot read the folder ({})", folder.string(), ec.message());
  for (const auto& e : it)
    if (e.is_regular_file(ec) && detect::is_image_file(e.path())) images.push_back(e.path().string());
  if (images.empty())
    user_error("--calibration {}: no .jpg, .jpeg, .png or .bmp image in it; give a folder of "
               "images like the model's inputs",
               folder.string());
  std::sort(images.begin(), images.end());
  if (count > 0 && static_cast<size_t>(count) < images.size()) images.resize(count);
  return images;
}

Tensor calibration_input(const std::string& image, const detect::DetectorConfig& config,
                         DType dtype) {
  const detect::Image img = detect::read_image(image);
  return config.family == detect::Family::kYoloX
             ? detect::preprocess_yolox(img, config.input_w, config.input_h, dtype).input
             : detect::preprocess_ultralytics(img, config.input_w, config.input_h, dtype).input;
}

}  // namespace yoloc::quant
