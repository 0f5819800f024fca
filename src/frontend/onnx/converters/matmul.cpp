// Converters of the matrix products. Gemm-7 made C's broadcasting implicit and Gemm-11 made C
// optional; both are what the IR op does, so every version from 7 passes through.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

YOLOC_REGISTER_CONVERTER("MatMul", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("MatMulInteger", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Gemm", 7, convert_passthrough);

}  // namespace yoloc::onnx_frontend
