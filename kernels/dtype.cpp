#include "kernels/dtype.h"

#include <cstring>

namespace hybrid::kernels {

DType parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32" || name == "float" || name == "f32") return DType::f32;
  if (name == "fp16" || name == "float16" || name == "half" || name == "f16") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  throw std::invalid_argument("unknown dtype '" + std::string(name) +
                              "' (expected fp32, fp16 or bf16)");
}

float f16_to_float_slow(f16_t h) {
  const uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t mant = h.bits & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal: normalise the mantissa.
    int shift = 0;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      ++shift;
    }
    mant &= 0x3ffu;
    bits = sign | (uint32_t(113 - shift) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

f16_t float_to_f16_slow(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return {uint16_t(sign | 0x7e00u)};   // NaN
  if (abs >= 0x477ff000u) return {uint16_t(sign | 0x7c00u)};  // rounds to ≥ 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value = abs_float / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return {sign};  // < 2^-25: rounds to 0
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return {uint16_t(sign | q)};
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits (nearest even).
  uint32_t v = abs - 0x38000000u;  // exponent 127 → 15
  v += 0xfffu + ((v >> 13) & 1u);
  return {uint16_t(sign | (v >> 13))};
}

}  // namespace hybrid::kernels
