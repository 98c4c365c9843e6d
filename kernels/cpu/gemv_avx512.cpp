// gemv's AVX-512 loops (gemv_kernels.h), compiled for their targets with
// attributes and chosen at run time (gemv.cpp), whatever -march says.
// - avx512: 16 fp32 lanes; up to four input rows at a time (4 × 4
//   accumulators, 4 weight vectors, one input vector: 21 of 32 zmm registers);
//   fp16/bf16 weights widened in registers, the input fp32.
// - avx512bf16: bf16 input and weights as they are, 32 per vector;
//   VDPBF16PS adds the two products of each bf16 pair into one fp32 lane.
// K's tail is read under a mask (zeros past the end), so there is no scalar loop.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and then warn that
// the value is or may be used uninitialized (a false positive of the header itself).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "kernels/cpu/gemv_kernels.h"

namespace hybrid::kernels::cpu::gemv_detail {

namespace {

#define HYBRID_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#define HYBRID_AVX512BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c,avx512bf16")))

// 16 weights from p as fp32, those past the mask as zeros.
template <class T>
HYBRID_AVX512_TARGET inline __m512 load16(const T* p, __mmask16 mask) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(mask, p);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(mask, p);
    if constexpr (std::is_same_v<T, bf16_t>)
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
      return _mm512_cvtph_ps(h);
  }
}

// The four horizontal sums [Σa, Σb, Σc, Σd]: halves added down to 256 bits,
// then pairwise adds. By value: an array argument kept the accumulators in
// memory, stored on every step of the loop.
HYBRID_AVX512_TARGET inline __m256 half_sum(__m512 a) {
  return _mm256_add_ps(_mm512_castps512_ps256(a),
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}
HYBRID_AVX512_TARGET inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(half_sum(a), half_sum(b)),
                                  _mm256_hadd_ps(half_sum(c), half_sum(d)));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

// acc[c] += w[c] · x for the four weight rows.
HYBRID_AVX512_TARGET inline void fma4(__m512* acc, const __m512* w, __m512 x) {
  acc[0] = _mm512_fmadd_ps(w[0], x, acc[0]);
  acc[1] = _mm512_fmadd_ps(w[1], x, acc[1]);
  acc[2] = _mm512_fmadd_ps(w[2], x, acc[2]);
  acc[3] = _mm512_fmadd_ps(w[3], x, acc[3]);
}

// Input rows M... (a pack expansion, so every accumulator index is a constant
// and GCC keeps them in registers; loops over the rows kept the [4][4] array
// in memory, stored on every step).
template <class T, int... M>
HYBRID_AVX512_TARGET void rows_block(const float* x, const T* const* w, const T* next, int K,
                                     float* sums, std::integer_sequence<int, M...>) {
  __m512 acc[sizeof...(M)][kGemvCols] = {};
  for (int k = 0; k < K; k += 16) {
    const __mmask16 mask = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
    prefetch_next(next, size_t(k) * kGemvCols * sizeof(T), kGemvCols * 16 * sizeof(T));
    const __m512 wv[kGemvCols] = {load16(w[0] + k, mask), load16(w[1] + k, mask),
                                  load16(w[2] + k, mask), load16(w[3] + k, mask)};
    (fma4(acc[M], wv, _mm512_maskz_loadu_ps(mask, x + size_t(M) * K + k)), ...);
  }
  (_mm_storeu_ps(sums + M * kGemvCols, sum4(acc[M][0], acc[M][1], acc[M][2], acc[M][3])), ...);
}

template <int MB, class T>
HYBRID_AVX512_TARGET void rows_of(const float* x, const T* const* w, const T* next, int K,
                                  float* sums) {
  rows_block(x, w, next, K, sums, std::make_integer_sequence<int, MB>{});
}

template <class T>
HYBRID_AVX512_TARGET void block(const void* x, const void* w, int K, int rows, int cols,
                                float* sums) {
  const T* wr[kGemvCols];
  for (int c = 0; c < kGemvCols; ++c)
    wr[c] = static_cast<const T*>(w) + size_t(c < cols ? c : 0) * K;
  const auto* xf = static_cast<const float*>(x);
  // Four input rows at a time, then the rest.
  constexpr decltype(&rows_of<1, T>) kRows[] = {&rows_of<1, T>, &rows_of<2, T>, &rows_of<3, T>,
                                                &rows_of<4, T>};
  for (int m = 0; m < rows; m += 4)
    kRows[std::min(rows - m, 4) - 1](xf + size_t(m) * K, wr,
                                     wr[0] + size_t(kPrefetchBlocks * kGemvCols) * K, K,
                                     sums + m * kGemvCols);
}

// acc[c] += the bf16 pair products of w[c] and x, for the four weight rows.
HYBRID_AVX512BF16_TARGET inline void dot4(__m512* acc, const __m512bh* w, __m512bh x) {
  acc[0] = _mm512_dpbf16_ps(acc[0], x, w[0]);
  acc[1] = _mm512_dpbf16_ps(acc[1], x, w[1]);
  acc[2] = _mm512_dpbf16_ps(acc[2], x, w[2]);
  acc[3] = _mm512_dpbf16_ps(acc[3], x, w[3]);
}

HYBRID_AVX512BF16_TARGET inline __m512bh load32(const uint16_t* p, __mmask32 mask) {
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// The bf16 pairs of x and w: one VDPBF16PS per input row and weight row covers
// 32 k. Input rows M... as in rows_block.
template <int... M>
HYBRID_AVX512BF16_TARGET void bf16_rows_block(const uint16_t* x, const uint16_t* const* w,
                                              const uint16_t* next, int K, float* sums,
                                              std::integer_sequence<int, M...>) {
  __m512 acc[sizeof...(M)][kGemvCols] = {};
  for (int k = 0; k < K; k += 32) {
    const __mmask32 mask = K - k >= 32 ? __mmask32(~0u) : __mmask32((1u << (K - k)) - 1);
    prefetch_next(next, size_t(k) * kGemvCols * 2, kGemvCols * 64);
    const __m512bh wv[kGemvCols] = {load32(w[0] + k, mask), load32(w[1] + k, mask),
                                    load32(w[2] + k, mask), load32(w[3] + k, mask)};
    (dot4(acc[M], wv, load32(x + size_t(M) * K + k, mask)), ...);
  }
  (_mm_storeu_ps(sums + M * kGemvCols, sum4(acc[M][0], acc[M][1], acc[M][2], acc[M][3])), ...);
}

template <int MB>
HYBRID_AVX512BF16_TARGET void bf16_rows_of(const uint16_t* x, const uint16_t* const* w,
                                           const uint16_t* next, int K, float* sums) {
  bf16_rows_block(x, w, next, K, sums, std::make_integer_sequence<int, MB>{});
}

HYBRID_AVX512BF16_TARGET void bf16_block(const void* x, const void* w, int K, int rows, int cols,
                                         float* sums) {
  const uint16_t* wr[kGemvCols];
  for (int c = 0; c < kGemvCols; ++c)
    wr[c] = static_cast<const uint16_t*>(w) + size_t(c < cols ? c : 0) * K;
  const auto* xb = static_cast<const uint16_t*>(x);
  constexpr decltype(&bf16_rows_of<1>) kRows[] = {&bf16_rows_of<1>, &bf16_rows_of<2>,
                                                  &bf16_rows_of<3>, &bf16_rows_of<4>};
  for (int m = 0; m < rows; m += 4)
    kRows[std::min(rows - m, 4) - 1](xb + size_t(m) * K, wr,
                                     wr[0] + size_t(kPrefetchBlocks * kGemvCols) * K, K,
                                     sums + m * kGemvCols);
}

}  // namespace

BlockFn avx512_block(DType w_dt) {
  return dispatch_dtype(w_dt, [](auto tag) -> BlockFn { return &block<decltype(tag)>; });
}

BlockFn avx512bf16_block() { return &bf16_block; }

}  // namespace hybrid::kernels::cpu::gemv_detail
