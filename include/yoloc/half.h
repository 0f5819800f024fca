#pragma once
/// IEEE binary16 and bfloat16 storage types. Both convert implicitly to and from float, so a
/// template written for float (a + b, std::max, comparisons) also works on them: arithmetic
/// happens in float and rounds once when stored back, as ONNX Runtime's reference kernels do.
#include <cstdint>
#include <cstring>

namespace yoloc {

/// float -> IEEE half bits, round to nearest even; handles subnormals, inf and NaN.
uint16_t float_to_half_bits(float f);
/// IEEE half bits -> float (exact).
float half_bits_to_float(uint16_t h);

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT(google-explicit-constructor)
  operator float() const { return half_bits_to_float(bits); }  // NOLINT
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) {  // NOLINT(google-explicit-constructor)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = 0x7fc0;  // quiet NaN
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  operator float() const {  // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace yoloc
