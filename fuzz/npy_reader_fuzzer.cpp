// libFuzzer target: the .npy reader (header dict, dtype, shape, data size).
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/npy.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    yoloc::read_npy(yoloc::fuzz::as_file(data, size));
  } catch (const yoloc::UserError&) {
  }
  return 0;
}
