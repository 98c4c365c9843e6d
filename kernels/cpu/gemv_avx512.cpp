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

// The four horizontal sums [Σa[0], Σa[1], Σa[2], Σa[3]]: halves added down to
// 256 bits, then pairwise adds.
HYBRID_AVX512_TARGET inline __m128 sum4(const __m512* a) {
  __m256 h[kGemvCols];
  for (int c = 0; c < kGemvCols; ++c)
    h[c] = _mm256_add_ps(_mm512_castps512_ps256(a[c]),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a[c]), 1)));
  const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

template <int MB, class T>
HYBRID_AVX512_TARGET void rows_block(const float* x, const T* const* w, const T* next, int K,
                                     float* sums) {
  __m512 acc[MB][kGemvCols];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
    for (int c = 0; c < kGemvCols; ++c) acc[m][c] = _mm512_setzero_ps();
  for (int k = 0; k < K; k += 16) {
    const __mmask16 mask = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
    prefetch_next(next, size_t(k) * kGemvCols * sizeof(T), kGemvCols * 16 * sizeof(T));
    __m512 wv[kGemvCols];
#pragma GCC unroll 4
    for (int c = 0; c < kGemvCols; ++c) wv[c] = load16(w[c] + k, mask);
#pragma GCC unroll 4
    for (int m = 0; m < MB; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + size_t(m) * K + k);
#pragma GCC unroll 4
      for (int c = 0; c < kGemvCols; ++c) acc[m][c] = _mm512_fmadd_ps(wv[c], xv, acc[m][c]);
    }
  }
  for (int m = 0; m < MB; ++m) _mm_storeu_ps(sums + m * kGemvCols, sum4(acc[m]));
}

template <class T>
HYBRID_AVX512_TARGET void block(const void* x, const void* w, int K, int rows, int cols,
                                float* sums) {
  const T* wr[kGemvCols];
  for (int c = 0; c < kGemvCols; ++c)
    wr[c] = static_cast<const T*>(w) + size_t(c < cols ? c : 0) * K;
  const auto* xf = static_cast<const float*>(x);
  // Four input rows at a time, then the rest.
  constexpr decltype(&rows_block<1, T>) kRows[] = {&rows_block<1, T>, &rows_block<2, T>,
                                                   &rows_block<3, T>, &rows_block<4, T>};
  for (int m = 0; m < rows; m += 4)
    kRows[std::min(rows - m, 4) - 1](xf + size_t(m) * K, wr,
                                     wr[0] + size_t(kPrefetchBlocks * kGemvCols) * K, K,
                                     sums + m * kGemvCols);
}

// The bf16 pairs of x and w: one VDPBF16PS per input row and weight row covers 32 k.
template <int MB>
HYBRID_AVX512BF16_TARGET void bf16_rows_block(const uint16_t* x, const uint16_t* const* w,
                                              const uint16_t* next, int K, float* sums) {
  __m512 acc[MB][kGemvCols];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
    for (int c = 0; c < kGemvCols; ++c) acc[m][c] = _mm512_setzero_ps();
  for (int k = 0; k < K; k += 32) {
    const __mmask32 mask = K - k >= 32 ? __mmask32(~0u) : __mmask32((1u << (K - k)) - 1);
    prefetch_next(next, size_t(k) * kGemvCols * 2, kGemvCols * 64);
    __m512bh wv[kGemvCols];
#pragma GCC unroll 4
    for (int c = 0; c < kGemvCols; ++c) wv[c] = (__m512bh)_mm512_maskz_loadu_epi16(mask, w[c] + k);
#pragma GCC unroll 4
    for (int m = 0; m < MB; ++m) {
      const auto xv = (__m512bh)_mm512_maskz_loadu_epi16(mask, x + size_t(m) * K + k);
#pragma GCC unroll 4
      for (int c = 0; c < kGemvCols; ++c) acc[m][c] = _mm512_dpbf16_ps(acc[m][c], xv, wv[c]);
    }
  }
  for (int m = 0; m < MB; ++m) _mm_storeu_ps(sums + m * kGemvCols, sum4(acc[m]));
}

HYBRID_AVX512BF16_TARGET void bf16_block(const void* x, const void* w, int K, int rows, int cols,
                                         float* sums) {
  const uint16_t* wr[kGemvCols];
  for (int c = 0; c < kGemvCols; ++c)
    wr[c] = static_cast<const uint16_t*>(w) + size_t(c < cols ? c : 0) * K;
  const auto* xb = static_cast<const uint16_t*>(x);
  constexpr decltype(&bf16_rows_block<1>) kRows[] = {&bf16_rows_block<1>, &bf16_rows_block<2>,
                                                     &bf16_rows_block<3>, &bf16_rows_block<4>};
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
