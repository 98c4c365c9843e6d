#include "kernels/sign_bits.h"

namespace hybrid::kernels {

void pack_signs(const float* x, size_t n, uint8_t* out) {
  const size_t full = n / 8;
  for (size_t b = 0; b < full; ++b) {
    const float* v = x + 8 * b;
    unsigned byte = 0;
    for (int k = 0; k < 8; ++k) byte = (byte << 1) | (v[k] < 0.0f ? 0u : 1u);
    out[b] = uint8_t(byte);
  }
  if (n % 8) {
    unsigned byte = 0;
    for (size_t i = 8 * full; i < n; ++i) byte |= (x[i] < 0.0f ? 0u : 1u) << (7 - i % 8);
    out[full] = uint8_t(byte);
  }
}

namespace {
// Each byte's 8 values, ±1, first value from the most significant bit: a byte
// unpacks as one 8-float multiply.
struct ByteSigns {
  float table[256][8];
  ByteSigns() {
    for (unsigned b = 0; b < 256; ++b)
      for (unsigned k = 0; k < 8; ++k) table[b][k] = (b >> (7 - k)) & 1u ? 1.0f : -1.0f;
  }
};
const ByteSigns kByteSigns;
}  // namespace

void unpack_signs(const uint8_t* bits, size_t n, float scale, float* out) {
  const size_t full = n / 8;
  for (size_t b = 0; b < full; ++b) {
    const float* s = kByteSigns.table[bits[b]];
    for (int k = 0; k < 8; ++k) out[8 * b + k] = scale * s[k];
  }
  for (size_t i = 8 * full; i < n; ++i) out[i] = scale * sign_of_bit(bits, i);
}

}  // namespace hybrid::kernels
