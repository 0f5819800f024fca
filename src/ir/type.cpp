#include "ir/type.h"

#include <fmt/format.h>

namespace yoloc {

std::string Dim::str() const {
  if (known()) return std::to_string(value);
  if (!symbol.empty()) return symbol;
  return "?";
}

TensorType TensorType::of(const Tensor& t) {
  std::vector<Dim> d(t.shape().begin(), t.shape().end());
  return TensorType(t.dtype(), std::move(d));
}

bool TensorType::is_static() const {
  if (!has_rank) return false;
  for (const auto& d : dims)
    if (!d.known()) return false;
  return true;
}

Shape TensorType::static_shape() const {
  YOLOC_CHECK(is_static(), "static_shape() of non-static type {}", str());
  Shape s;
  for (const auto& d : dims) s.push_back(d.value);
  return s;
}

std::string TensorType::str() const {
  if (!has_rank) return fmt::format("{}[*]", dtype_name(dtype));
  std::vector<std::string> parts;
  for (const auto& d : dims) parts.push_back(d.str());
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(parts, ", "));
}

}  // namespace yoloc
