#pragma once
/// A dispatcher that turns a runtime DType (yoloc/dtype.h) into a C++ type.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "yoloc/dtype.h"

namespace yoloc {

/// C++ type of a DType: storage type used by reference kernels. bool is stored as uint8_t-sized
/// bool.
template <DType D>
struct CType;
template <> struct CType<DType::kFloat32> { using type = float; };
template <> struct CType<DType::kFloat16> { using type = Half; };
template <> struct CType<DType::kBFloat16> { using type = BFloat16; };
template <> struct CType<DType::kFloat64> { using type = double; };
template <> struct CType<DType::kInt8> { using type = int8_t; };
template <> struct CType<DType::kUInt8> { using type = uint8_t; };
template <> struct CType<DType::kInt16> { using type = int16_t; };
template <> struct CType<DType::kUInt16> { using type = uint16_t; };
template <> struct CType<DType::kInt32> { using type = int32_t; };
template <> struct CType<DType::kUInt32> { using type = uint32_t; };
template <> struct CType<DType::kInt64> { using type = int64_t; };
template <> struct CType<DType::kUInt64> { using type = uint64_t; };
template <> struct CType<DType::kBool> { using type = bool; };

/// A value whose type names a C++ element type: `dispatch(t, [&](auto tag) { using T =
/// typename decltype(tag)::type; ... })`.
template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) for the C++ type of `t`. `what` names the caller in the error raised for
/// kUndefined.
template <typename F>
decltype(auto) dispatch_all(DType t, F&& f, std::string_view what = "tensor") {
  switch (t) {
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat16: return f(TypeTag<Half>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    case DType::kBool: return f(TypeTag<bool>{});
    default: break;
  }
  internal_error("{}: undefined element type", what);
}

/// Like dispatch_all, but only for numeric types (not bool); other types raise a UserError that
/// names `what`.
template <typename F>
decltype(auto) dispatch_numeric(DType t, F&& f, std::string_view what) {
  if (t == DType::kBool || t == DType::kUndefined)
    user_error("{}: element type {} is not supported (expected a numeric type)", what,
               dtype_name(t));
  return dispatch_all(t, std::forward<F>(f), what);
}

/// Like dispatch_all, but only for float32/float16/bfloat16/float64.
template <typename F>
decltype(auto) dispatch_float(DType t, F&& f, std::string_view what) {
  switch (t) {
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat16: return f(TypeTag<Half>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    default: break;
  }
  user_error("{}: element type {} is not supported (expected float32, float16, bfloat16 or "
             "float64)",
             what, dtype_name(t));
}

}  // namespace yoloc
