#include "yoloc/tensor.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <type_traits>
#include <new>

#include "core/dtype.h"

namespace yoloc {

int64_t shape_numel(const Shape& s) {
  // The product of the nonzero dims is bounded too: an empty tensor's strides stay in range.
  int64_t n = 1, nonzero = 1;
  for (int64_t d : s) {
    if (d < 0) user_error("invalid tensor shape {}: dimensions must be >= 0", shape_str(s));
    if (d != 0 && nonzero > (int64_t{1} << 40) / d)
      user_error("tensor shape {} is too large (over 2^40 elements)", shape_str(s));
    if (d != 0) nonzero *= d;
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

Shape shape_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) {
    const auto k = static_cast<size_t>(i);
    if (__builtin_mul_overflow(st[k + 1], s[k + 1], &st[k]))
      user_error("tensor shape {} is too large (its strides overflow 64 bits)", shape_str(s));
  }
  return st;
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(shape_numel(shape_)) {
  YOLOC_CHECK(dtype != DType::kUndefined, "Tensor with undefined dtype");
  const size_t n = std::max<size_t>(nbytes(), 1);
  // 64-byte aligned, zero-filled storage.
  auto* p = static_cast<uint8_t*>(::operator new[](n, std::align_val_t{64}));
  std::memset(p, 0, n);
  buf_ = std::shared_ptr<uint8_t[]>(p, [](uint8_t* q) { ::operator delete[](q, std::align_val_t{64}); });
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  if (shape_numel(shape) != numel_)
    user_error("cannot reshape {} to {}: element counts differ", describe(*this), shape_str(shape));
  t.shape_ = std::move(shape);
  return t;
}

void Tensor::check_count(size_t n) const {
  YOLOC_CHECK(static_cast<int64_t>(n) == numel_, "from_vector: {} values for {}", n,
              shape_str(shape_));
}

void Tensor::check_type(DType t) const {
  YOLOC_CHECK(t == dtype_, "tensor of {} accessed as {}", dtype_name(dtype_), dtype_name(t));
}

std::vector<int64_t> Tensor::to_int64s() const {
  if (is_float(dtype_))
    user_error("expected an integer tensor (shape, axes, indices), got {}", describe(*this));
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  dispatch_all(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d = static_cast<const T*>(raw());
    for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = static_cast<int64_t>(d[i]);
  });
  return v;
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> v(static_cast<size_t>(numel_));
  dispatch_all(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d = static_cast<const T*>(raw());
    for (int64_t i = 0; i < numel_; ++i)
      v[static_cast<size_t>(i)] = static_cast<double>(d[i]);
  });
  return v;
}

namespace {
template <typename To, typename From>
To convert(From v) {
  constexpr bool kFromFloat = std::is_floating_point_v<From> || std::is_same_v<From, Half> ||
                              std::is_same_v<From, BFloat16>;
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<double>(v) != 0.0;
  } else if constexpr (kFromFloat && std::is_integral_v<To>) {
    // Out-of-range float -> int is undefined in C++; saturate (NaN -> 0) to stay defined.
    const double x = static_cast<double>(v);
    if (!(x == x)) return To(0);
    if (x <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (x >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace

Tensor Tensor::cast(DType to) const {
  Tensor out(to, shape_);
  dispatch_all(dtype_, [&](auto from_tag) {
    using F = typename decltype(from_tag)::type;
    dispatch_all(to, [&](auto to_tag) {
      using T = typename decltype(to_tag)::type;
      const F* s = static_cast<const F*>(raw());
      T* d = static_cast<T*>(out.raw());
      for (int64_t i = 0; i < numel_; ++i) d[i] = convert<T, F>(s[i]);
    });
  });
  return out;
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "<undefined>";
  return fmt::format("{}{}", dtype_name(t.dtype()), shape_str(t.shape()));
}

}  // namespace yoloc
