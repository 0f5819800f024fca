#pragma once
/// TensorProto / AttributeProto / TypeProto conversion.
#include <onnx/onnx_pb.h>

#include "ir/attribute.h"
#include "ir/type.h"

namespace yoloc::onnx_frontend {

/// ONNX TensorProto.DataType -> DType (kUndefined for unsupported types such as string).
DType dtype_from_onnx(int32_t t);
/// Converts an initializer or attribute tensor; raises a UserError naming it for external data,
/// unsupported types or a size mismatch.
Tensor tensor_from_proto(const onnx::TensorProto& p);
/// Converts a value_info type.
TensorType type_from_proto(const onnx::TypeProto& t, const std::string& what);
/// Converts a node's attributes; graph attributes (If/Loop bodies) raise a UserError.
Attrs attrs_from_proto(const onnx::NodeProto& n);

}  // namespace yoloc::onnx_frontend
