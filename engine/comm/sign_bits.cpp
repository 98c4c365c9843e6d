#include "engine/comm/sign_bits.h"

namespace hybrid::engine::comm {

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

void unpack_signs(const uint8_t* bits, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = scale * sign_of_bit(bits, i);
}

}  // namespace hybrid::engine::comm
