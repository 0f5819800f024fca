// Converters of the convolutions. Conv and ConvTranspose kept their attributes from opset 1 on
// (opset 11 only relaxed kernel_shape inference), so every version passes through.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

YOLOC_REGISTER_CONVERTER("Conv", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ConvInteger", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("ConvTranspose", 1, convert_passthrough);

}  // namespace yoloc::onnx_frontend
