// One bit per value, the form in which the compressed all-reduce ships signs:
// bit set for x >= 0 (and for ±0 and NaN, as DeepSpeed's
// `sign().add_(1).bool()` gives), 8 values per byte, the first value in the
// byte's most significant bit (NumPy/CuPy packbits' order, so the bytes on the
// wire are DeepSpeed's).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hybrid::kernels {

constexpr size_t packed_sign_bytes(size_t n) { return (n + 7) / 8; }

// The sign a bit stands for: +1 when set, −1 when clear.
inline float sign_of_bit(const uint8_t* bits, size_t i) {
  return (bits[i / 8] >> (7 - i % 8)) & 1u ? 1.0f : -1.0f;
}
// +1 for x >= 0 (±0 and NaN included), −1 otherwise: the value a bit stands for.
inline float compressed_sign(float x) { return x < 0.0f ? -1.0f : 1.0f; }

// out: packed_sign_bytes(n) bytes; the unused low bits of a last partial byte are 0.
void pack_signs(const float* x, size_t n, uint8_t* out);
// out[i] = scale · sign_of_bit(bits, i) for i < n.
void unpack_signs(const uint8_t* bits, size_t n, float scale, float* out);

}  // namespace hybrid::kernels
