#include "frontend/onnx/tensor_proto.h"

#include <cstring>
#include <limits>

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
  // The values the shape declares, counted without overflow: a few bytes of a model can declare
  // terabytes, so the data must be there before anything is allocated.
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) user_error("tensor '{}' has a negative dimension {}", p.name(), shape_str(shape));
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      user_error("tensor '{}' of shape {} has more values than a 64-bit count holds: the model is "
                 "corrupt", p.name(), shape_str(shape));
    n *= static_cast<uint64_t>(d);
  }
  auto mismatch = [&](uint64_t got) {
    user_error("tensor '{}' of shape {} should hold {} values but holds {}: the model is corrupt",
               p.name(), shape_str(shape), n, got);
  };
  const uint64_t size = std::max<uint64_t>(dtype_size(dt), 1);
  if (p.has_raw_data()) {
    if (p.raw_data().size() != n * size || n > p.raw_data().size()) mismatch(p.raw_data().size() / size);
    Tensor t(dt, shape);
    if (n) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  uint64_t held = 0;
  switch (dt) {
    case DType::kFloat32: held = static_cast<uint64_t>(p.float_data_size()); break;
    case DType::kFloat64: held = static_cast<uint64_t>(p.double_data_size()); break;
    case DType::kInt64: held = static_cast<uint64_t>(p.int64_data_size()); break;
    case DType::kUInt64:
    case DType::kUInt32: held = static_cast<uint64_t>(p.uint64_data_size()); break;
    default: held = static_cast<uint64_t>(p.int32_data_size()); break;
  }
  if (held != n) mismatch(held);
  Tensor t(dt, shape);
  dispatch_all(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      for (size_t i = 0; i < n; ++i) d[i] = p.float_data(static_cast<int>(i));
    } else if constexpr (std::is_same_v<T, double>) {
      for (size_t i = 0; i < n; ++i) d[i] = p.double_data(static_cast<int>(i));
    } else if constexpr (std::is_same_v<T, int64_t>) {
      for (size_t i = 0; i < n; ++i) d[i] = p.int64_data(static_cast<int>(i));
    } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, uint32_t>) {
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(p.uint64_data(static_cast<int>(i)));
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      for (size_t i = 0; i < n; ++i) d[i].bits = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
    } else {  // int8/uint8/int16/uint16/int32/bool live in int32_data
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
