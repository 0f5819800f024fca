#pragma once
/// Element types of tensors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "yoloc/half.h"

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

}  // namespace yoloc
