#include "frontend/onnx/tensor_proto.h"

#include <cstring>

namespace yoloc::onnx_frontend {

DType dtype_from_onnx(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::kFloat32;
    case onnx::TensorProto::UINT8: return DType::kUInt8;
    case onnx::TensorProto::INT8: return DType::kInt8;
    case onnx::TensorProto::UINT16: return DType::kUInt16;
    case onnx::TensorProto::INT16: return DType::kInt16;
    case onnx::TensorProto::INT32: return DType::kInt32;
    case onnx::TensorProto::INT64: return DType::kInt64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    case onnx::TensorProto::FLOAT16: return DType::kFloat16;
    case onnx::TensorProto::DOUBLE: return DType::kFloat64;
    case onnx::TensorProto::UINT32: return DType::kUInt32;
    case onnx::TensorProto::UINT64: return DType::kUInt64;
    case onnx::TensorProto::BFLOAT16: return DType::kBFloat16;
    default: return DType::kUndefined;
  }
}

Tensor tensor_from_proto(const onnx::TensorProto& p) {
  const DType dt = dtype_from_onnx(p.data_type());
  if (dt == DType::kUndefined)
    user_error("tensor '{}' has ONNX data type {}, which yoloc does not support", p.name(),
               p.data_type());
  if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0)
    user_error("tensor '{}' stores its data in an external file; re-export the model with the "
               "weights inside (onnx.save(model, path, save_as_external_data=False))",
               p.name());
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) user_error("tensor '{}' has a negative dimension {}", p.name(), shape_str(shape));
  Tensor t(dt, shape);
  const size_t n = static_cast<size_t>(t.numel());
  auto mismatch = [&](size_t got) {
    user_error("tensor '{}' of shape {} should hold {} values but holds {}: the model is corrupt",
               p.name(), shape_str(shape), n, got);
  };
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes()) mismatch(p.raw_data().size() / std::max<size_t>(dtype_size(dt), 1));
    if (n) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  dispatch_all(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (static_cast<size_t>(p.float_data_size()) != n) mismatch(p.float_data_size());
      for (size_t i = 0; i < n; ++i) d[i] = p.float_data(static_cast<int>(i));
    } else if constexpr (std::is_same_v<T, double>) {
      if (static_cast<size_t>(p.double_data_size()) != n) mismatch(p.double_data_size());
      for (size_t i = 0; i < n; ++i) d[i] = p.double_data(static_cast<int>(i));
    } else if constexpr (std::is_same_v<T, int64_t>) {
      if (static_cast<size_t>(p.int64_data_size()) != n) mismatch(p.int64_data_size());
      for (size_t i = 0; i < n; ++i) d[i] = p.int64_data(static_cast<int>(i));
    } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, uint32_t>) {
      if (static_cast<size_t>(p.uint64_data_size()) != n) mismatch(p.uint64_data_size());
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(p.uint64_data(static_cast<int>(i)));
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      if (static_cast<size_t>(p.int32_data_size()) != n) mismatch(p.int32_data_size());
      for (size_t i = 0; i < n; ++i) d[i].bits = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
    } else {  // int8/uint8/int16/uint16/int32/bool live in int32_data
      if (static_cast<size_t>(p.int32_data_size()) != n) mismatch(p.int32_data_size());
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(p.int32_data(static_cast<int>(i)));
    }
  });
  return t;
}

TensorType type_from_proto(const onnx::TypeProto& t, const std::string& what) {
  if (!t.has_tensor_type())
    user_error("'{}' is not a tensor (sequence, map or optional types are not supported)", what);
  const auto& tt = t.tensor_type();
  const DType dt = dtype_from_onnx(tt.elem_type());
  if (dt == DType::kUndefined)
    user_error("'{}' has ONNX element type {}, which yoloc does not support", what,
               tt.elem_type());
  if (!tt.has_shape()) return TensorType::unranked(dt);
  std::vector<Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      dims.emplace_back(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      dims.push_back(Dim::sym(d.dim_param()));
    else
      dims.emplace_back();
  }
  return TensorType(dt, std::move(dims));
}

Attrs attrs_from_proto(const onnx::NodeProto& n) {
  Attrs a;
  for (const auto& at : n.attribute()) {
    switch (at.type()) {
      case onnx::AttributeProto::INT: a.set(at.name(), at.i()); break;
      case onnx::AttributeProto::FLOAT: a.set(at.name(), at.f()); break;
      case onnx::AttributeProto::STRING: a.set(at.name(), at.s()); break;
      case onnx::AttributeProto::INTS:
        a.set(at.name(), std::vector<int64_t>(at.ints().begin(), at.ints().end()));
        break;
      case onnx::AttributeProto::FLOATS:
        a.set(at.name(), std::vector<float>(at.floats().begin(), at.floats().end()));
        break;
      case onnx::AttributeProto::STRINGS:
        a.set(at.name(), std::vector<std::string>(at.strings().begin(), at.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR: a.set(at.name(), tensor_from_proto(at.t())); break;
      case onnx::AttributeProto::GRAPH:
      case onnx::AttributeProto::GRAPHS:
        user_error("{} node '{}' has a sub-graph attribute '{}': control flow (If, Loop, Scan) is "
                   "not supported",
                   n.op_type(), n.name(), at.name());
      default:
        user_error("{} node '{}': attribute '{}' has an unsupported type {}", n.op_type(), n.name(),
                   at.name(), static_cast<int>(at.type()));
    }
  }
  return a;
}

}  // namespace yoloc::onnx_frontend
