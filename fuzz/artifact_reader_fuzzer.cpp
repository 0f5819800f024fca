// libFuzzer target: the .ycm reader (header, manifest JSON, blob table) and every blob it lists.
// Any input must give an artifact or a UserError.
//
// A mutated file almost never keeps a valid SHA-256 digest, so most inputs are packed: the bytes
// up to the first NUL are the manifest text, the rest the blob section, laid out with a valid
// header and digest by pack_artifact (what a crafted artifact with its digest recomputed looks
// like). An input whose first byte is 0x01 is taken as a whole file instead (header checks).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "artifact/artifact_reader.h"
#include "artifact/artifact_writer.h"
#include "core/error.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::string file;
    if (size > 0 && data[0] == 0x01) {
      file.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
    } else {
      const std::string_view in(reinterpret_cast<const char*>(data), size);
      const size_t nul = in.find('\0');
      file = yoloc::artifact::pack_artifact(
          in.substr(0, nul), nul == std::string_view::npos ? "" : in.substr(nul + 1),
          std::nullopt);
    }
    const auto a = yoloc::artifact::Artifact::open(
        yoloc::fuzz::as_file(reinterpret_cast<const uint8_t*>(file.data()), file.size()));
    size_t sum = 0;
    for (const auto& b : a.manifest().blobs)
      for (const std::byte x : a.blob(b.name)) sum += static_cast<size_t>(x);
    volatile size_t keep = sum;
    (void)keep;
  } catch (const yoloc::UserError&) {
  }
  return 0;
}
