// Converters of the pools. Later opsets only added attributes (storage_order and Indices in 8,
// ceil_mode and dilations in 10, int8 in 12, AveragePool dilations in 19) whose defaults give the
// older behaviour, so every version passes through.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

YOLOC_REGISTER_CONVERTER("MaxPool", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("AveragePool", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("LpPool", 2, convert_passthrough);
YOLOC_REGISTER_CONVERTER("GlobalAveragePool", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("GlobalMaxPool", 1, convert_passthrough);

}  // namespace yoloc::onnx_frontend
