// Converters of the unary elementwise ops. Their signatures did not change up to opset 28 (later
// versions only added element types), so each passes through from the opset that introduced it
// in its current form.
#include "frontend/onnx/converter.h"

namespace yoloc::onnx_frontend {

YOLOC_REGISTER_CONVERTER("Abs", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Neg", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Exp", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Log", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Sqrt", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Reciprocal", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Floor", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Ceil", 6, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Round", 11, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Sign", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Sin", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Cos", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Tan", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Asin", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Acos", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Atan", 7, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Sinh", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Cosh", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Asinh", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Acosh", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Atanh", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Erf", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Not", 1, convert_passthrough);
YOLOC_REGISTER_CONVERTER("IsNaN", 9, convert_passthrough);
YOLOC_REGISTER_CONVERTER("IsInf", 10, convert_passthrough);
YOLOC_REGISTER_CONVERTER("Identity", 1, convert_passthrough);

}  // namespace yoloc::onnx_frontend
