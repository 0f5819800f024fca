// libFuzzer target: the ONNX importer (protobuf parse, converters, shape inference, verifier).
// Any input must give a graph or a UserError; another exception or a signal is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "frontend/onnx/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    yoloc::onnx_frontend::import_onnx_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  } catch (const yoloc::UserError&) {
  }
  return 0;
}
