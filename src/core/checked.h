#pragma once
/// Size arithmetic that a model's numbers drive (split sizes, repeats, dims): int64 overflow is
/// a UserError naming what was computed, never undefined behaviour or a wrapped size.
#include <cstdint>
#include <string_view>

#include "core/error.h"

namespace yoloc {

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    user_error("{}: {} + {} overflows a 64-bit size (the model is malformed)", what, a, b);
  return r;
}

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    user_error("{}: {} x {} overflows a 64-bit size (the model is malformed)", what, a, b);
  return r;
}

}  // namespace yoloc
