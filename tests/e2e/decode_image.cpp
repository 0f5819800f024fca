// yoloc_test_decode_image IMAGE OUT.npy: decodes an image with yoloc's own decoder
// (detect::read_image) into a uint8 HWC RGB .npy, so the tests' Python reference pre-processing
// starts from the pixels yoloc decodes.
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/npy.h"
#include "yoloc/image.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IMAGE OUT.npy\n", argv[0]);
    return 2;
  }
  try {
    const yoloc::detect::Image img = yoloc::detect::read_image(argv[1]);
    yoloc::Tensor t(yoloc::DType::kUInt8, {img.height, img.width, 3});
    auto* rgb = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i + 2 < img.bgr.size(); i += 3) {
      rgb[i + 0] = img.bgr[i + 2];
      rgb[i + 1] = img.bgr[i + 1];
      rgb[i + 2] = img.bgr[i + 0];
    }
    yoloc::write_npy(argv[2], t);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
