#include "core/dtype.h"

namespace yoloc {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: case DType::kUInt32: return 4;
    case DType::kFloat16: case DType::kBFloat16: case DType::kInt16: case DType::kUInt16: return 2;
    case DType::kFloat64: case DType::kInt64: case DType::kUInt64: return 8;
    case DType::kInt8: case DType::kUInt8: case DType::kBool: return 1;
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kInt32: return "int32";
    case DType::kUInt32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

DType dtype_from_name(std::string_view n) {
  for (int i = 1; i <= static_cast<int>(DType::kBool); ++i) {
    auto t = static_cast<DType>(i);
    if (dtype_name(t) == n) return t;
  }
  if (n == "float") return DType::kFloat32;
  if (n == "half") return DType::kFloat16;
  if (n == "double") return DType::kFloat64;
  return DType::kUndefined;
}

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat64;
}

bool is_integer(DType t) { return !is_float(t) && t != DType::kBool && t != DType::kUndefined; }

bool is_signed(DType t) {
  return is_float(t) || t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 ||
         t == DType::kInt64;
}

}  // namespace yoloc
