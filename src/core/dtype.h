#pragma once
/// Element types of tensors, and a dispatcher that turns a runtime DType into a C++ type.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "core/half.h"

namespace yoloc {

enum class DType : uint8_t {
  kUndefined,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kBool,
};

/// Size of one element in bytes (0 for kUndefined).
size_t dtype_size(DType t);
/// Short lower-case name: "float32", "float16", "int64", ...
std::string_view dtype_name(DType t);
/// Parses dtype_name's output (and numpy's "float32"-style names); kUndefined if unknown.
DType dtype_from_name(std::string_view name);
bool is_float(DType t);
bool is_integer(DType t);
bool is_signed(DType t);

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

/// DType of a C++ type.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<Half>() { return DType::kFloat16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::kBFloat16; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }

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
