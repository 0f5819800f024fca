// libFuzzer target: the image decoder (libjpeg-turbo, libpng and stb_image's BMP reader behind
// the header and size checks), with limits small enough that a fuzzed header cannot ask for
// gigabytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "yoloc/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const yoloc::detect::ImageLimits limits{int64_t{1} << 20, int64_t{1} << 20};
  try {
    yoloc::detect::decode_image(std::string(reinterpret_cast<const char*>(data), size),
                                "fuzz.img", limits);
  } catch (const yoloc::UserError&) {
  }
  return 0;
}
