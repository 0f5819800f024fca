#pragma once
/// A dense, contiguous, row-major tensor with shared storage. Copying a Tensor shares its buffer;
/// clone() copies the data.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "yoloc/dtype.h"

namespace yoloc {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar). Raises a UserError on negative dims.
int64_t shape_numel(const Shape& s);
/// "[1, 3, 640, 640]".
std::string shape_str(const Shape& s);
/// Row-major strides in elements.
Shape shape_strides(const Shape& s);

class Tensor {
 public:
  /// An undefined tensor (used for omitted optional inputs).
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(DType dtype, Shape shape);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i < 0 ? i + rank() : i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return buf_ ? buf_.get() : nullptr; }
  const void* raw() const { return buf_ ? buf_.get() : nullptr; }
  /// Typed access; checks that T matches the dtype.
  template <typename T>
  T* data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(raw());
  }

  /// A deep copy.
  Tensor clone() const;
  /// Same data, another shape with the same element count.
  Tensor reshaped(Shape shape) const;

  /// Values of an integer (or bool) tensor as int64, e.g. shape or axes inputs.
  std::vector<int64_t> to_int64s() const;
  /// Values of any numeric tensor as double.
  std::vector<double> to_doubles() const;
  /// Converts every element to another dtype (float->int truncates like a C cast, as ONNX Cast).
  Tensor cast(DType to) const;

  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(shape));
    t.check_count(values.size());
    T* d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor scalar(T v) {
    return from_vector<T>({}, std::vector<T>{v});
  }

 private:
  void check_type(DType t) const;
  /// Raises an InternalError unless the tensor has `n` elements.
  void check_count(size_t n) const;

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t[]> buf_;
};

/// "float32[1, 3, 640, 640]".
std::string describe(const Tensor& t);

}  // namespace yoloc
