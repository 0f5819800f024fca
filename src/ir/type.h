#pragma once
/// Tensor types of IR values: element type plus a shape whose dimensions are either known
/// integers or symbols (the dynamic batch "batch", "height", ...), or unknown.
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "yoloc/tensor.h"

namespace yoloc {

/// One dimension: a known size, a named symbol, or unknown (neither).
struct Dim {
  int64_t value = -1;  ///< >= 0 when known
  std::string symbol;  ///< non-empty for a symbolic dimension

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT(google-explicit-constructor)
  static Dim sym(std::string s) {
    Dim d;
    d.symbol = std::move(s);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  std::string str() const;
};

/// dtype + optional rank + dims. `has_rank == false` means nothing is known about the shape.
struct TensorType {
  DType dtype = DType::kUndefined;
  bool has_rank = false;
  std::vector<Dim> dims;

  TensorType() = default;
  TensorType(DType t, std::vector<Dim> d) : dtype(t), has_rank(true), dims(std::move(d)) {}
  static TensorType of(const Tensor& t);
  static TensorType unranked(DType t) {
    TensorType tt;
    tt.dtype = t;
    return tt;
  }

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  /// True when every dimension is a known integer.
  bool is_static() const;
  /// The dims as integers; requires is_static().
  Shape static_shape() const;
  /// "float32[batch, 3, 640, 640]".
  std::string str() const;
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && has_rank == o.has_rank && dims == o.dims;
  }
};

}  // namespace yoloc
