// yoloc_test_decode_image IMAGE OUT.npy: decodes an image with stb_image into a uint8 HWC RGB
// .npy, so the tests' Python reference pre-processing starts from the pixels yoloc decodes.
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#include <cstdio>
#include <cstring>

#include "core/npy.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IMAGE OUT.npy\n", argv[0]);
    return 2;
  }
  int w = 0, h = 0, c = 0;
  unsigned char* pixels = stbi_load(argv[1], &w, &h, &c, 3);
  if (!pixels) {
    std::fprintf(stderr, "error: cannot decode '%s': %s\n", argv[1], stbi_failure_reason());
    return 1;
  }
  yoloc::Tensor t(yoloc::DType::kUInt8, {h, w, 3});
  std::memcpy(t.raw(), pixels, t.nbytes());
  stbi_image_free(pixels);
  try {
    yoloc::write_npy(argv[2], t);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
