// Vectorised building blocks shared by the CPU kernels.
//
// Every kernel computes in fp32 whatever the storage dtype. Rather than
// converting element by element inside the arithmetic (which stops GCC from
// vectorising), a kernel converts a row or a chunk to an fp32 buffer with the
// bulk converters below (F16C for fp16, integer shifts for bf16, 8 lanes at a
// time), runs plain float loops the compiler vectorises, then converts back.
// For fp32 storage the helpers hand back the caller's own pointer: no copy.
//
// fast_exp / fast_tanh are branch-free so that loops calling them vectorise
// (libm's expf does not, without -ffast-math); kernels/CMakeLists.txt compiles
// kernels/cpu with -fno-math-errno -fno-trapping-math so that clamps and sqrt
// vectorise too.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu {

// Elements per chunk of the chunked elementwise kernels: two or three fp32
// chunks stay in L1 and the OpenMP loop has enough iterations to balance.
inline constexpr size_t kChunk = 2048;
// Below this many elements an elementwise op runs on one thread: the fork/join
// costs more than it saves.
inline constexpr size_t kParallelMin = 1 << 15;

// Runs chunk(i0, len) on each kChunk-element chunk of [0, n): across threads
// (OpenMP, a static schedule) above kParallelMin elements, else on this one.
template <class Chunk>
inline void for_each_chunk(size_t n, Chunk&& chunk) {
  const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const size_t i0 = size_t(ch) * kChunk;
    chunk(i0, std::min(kChunk, n - i0));
  }
}

// The vectorised prefix of the conversions from and to T (bf16_t or f16_t):
// how many leading elements it converted (a multiple of 8; 0 without AVX2 for
// bf16, F16C for fp16), the rest left to a scalar loop.
template <class T>
inline size_t to_f32_simd(float* __restrict dst, const T* __restrict src, size_t n) {
  size_t i = 0;
  if constexpr (std::is_same_v<T, bf16_t>) {
#ifdef __AVX2__
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
    }
#endif
  } else {
#ifdef __F16C__
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
#endif
  }
  return i;
}

// Round to nearest even; NaN stays NaN (quieted).
template <class T>
inline size_t from_f32_simd(T* __restrict dst, const float* __restrict src, size_t n) {
  size_t i = 0;
  if constexpr (std::is_same_v<T, bf16_t>) {
#ifdef __AVX2__
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf_bits = _mm256_set1_epi32(0x7f800000);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i round_base = _mm256_set1_epi32(0x7fff);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    for (; i + 8 <= n; i += 8) {
      const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + i));
      const __m256i hi = _mm256_srli_epi32(u, 16);
      const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf_bits);
      const __m256i bias = _mm256_add_epi32(round_base, _mm256_and_si256(hi, one));
      const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
      const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), is_nan);
      const __m128i packed =
          _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), packed);
    }
#endif
  } else {
#ifdef __F16C__
    for (; i + 8 <= n; i += 8) {
      const __m128i h =
          _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
#endif
  }
  return i;
}

// dst[0..n) = fp32(src[0..n)).
template <class T>
inline void to_f32(float* __restrict dst, const T* __restrict src, size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, n * sizeof(float));
  } else {
    for (size_t i = to_f32_simd(dst, src, n); i < n; ++i) dst[i] = load(src[i]);
  }
}

// dst[0..n) = T(src[0..n)), round to nearest even; NaN stays NaN.
template <class T>
inline void from_f32(T* __restrict dst, const float* __restrict src, size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, n * sizeof(float));
  } else {
    for (size_t i = from_f32_simd(dst, src, n); i < n; ++i) dst[i] = store<T>(src[i]);
  }
}

// The fp32 view of n elements: src itself for fp32, else converted into buf.
template <class T>
inline const float* view_f32(const T* src, float* buf, size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    (void)buf;
    (void)n;
    return src;
  } else {
    to_f32(buf, src, n);
    return buf;
  }
}

// A per-thread scratch buffer of at least n floats, reused across calls (no
// allocation in hot loops once warm). Slots let one kernel hold several.
inline float* thread_scratch(int slot, size_t n) {
  thread_local std::vector<float> buffers[8];
  std::vector<float>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

// exp(x) to ~2 ulp for x in [-88, 88]; 0 below, exp(88) above. Cephes-style:
// x = n·ln2 + r, |r| <= ln2/2, degree-6 polynomial in r, 2^n from the bits.
inline float fast_exp(float x) {
  x = x < -88.0f ? -88.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = x - n * 0.693145751953125f - n * 1.428606765330187045e-06f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n = -127 gives a zero scale: exp(x < -87.3) flushes to 0 instead of a denormal.
  const uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// tanh(u) = (e^{2u} - 1) / (e^{2u} + 1); |u| > 9 is ±1 to fp32 precision.
inline float fast_tanh(float u) {
  u = u < -9.0f ? -9.0f : u;
  u = u > 9.0f ? 9.0f : u;
  const float e = fast_exp(2.0f * u);
  return (e - 1.0f) / (e + 1.0f);
}

}  // namespace hybrid::kernels::cpu
