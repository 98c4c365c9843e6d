// gemv's AVX2 loops (gemv_kernels.h): 8 fp32 lanes, FMA, F16C. Two input rows
// at a time: 2 × 4 accumulators, 4 weight vectors and one input vector fill 13
// of the 16 ymm registers. fp16/bf16 weights are widened in registers (bf16 is
// the top half of an fp32); the input is fp32 already. K's tail (< 8) is scalar.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/gemv_kernels.h"

namespace hybrid::kernels::cpu::gemv_detail {

namespace {

#define HYBRID_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

template <class T>
HYBRID_AVX2_TARGET inline __m256 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_loadu_ps(p);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<T, bf16_t>)
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    else
      return _mm256_cvtph_ps(h);
  }
}

// The four horizontal sums [Σa, Σb, Σc, Σd]; by value, so the accumulators
// stay in registers through the loop.
HYBRID_AVX2_TARGET inline __m128 sum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

template <int MB, class T>
HYBRID_AVX2_TARGET void rows_block(const float* x, const T* const* w, const T* next, int K,
                                   float* sums) {
  __m256 acc[MB][kGemvCols];
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
    for (int c = 0; c < kGemvCols; ++c) acc[m][c] = _mm256_setzero_ps();
  int k = 0;
  for (; k + 8 <= K; k += 8) {
    prefetch_next(next, size_t(k) * kGemvCols * sizeof(T), kGemvCols * 8 * sizeof(T));
    __m256 wv[kGemvCols];
#pragma GCC unroll 4
    for (int c = 0; c < kGemvCols; ++c) wv[c] = load8(w[c] + k);
#pragma GCC unroll 2
    for (int m = 0; m < MB; ++m) {
      const __m256 xv = _mm256_loadu_ps(x + size_t(m) * K + k);
#pragma GCC unroll 4
      for (int c = 0; c < kGemvCols; ++c) acc[m][c] = _mm256_fmadd_ps(wv[c], xv, acc[m][c]);
    }
  }
  for (int m = 0; m < MB; ++m)
    _mm_storeu_ps(sums + m * kGemvCols, sum4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
  for (; k < K; ++k)
    for (int m = 0; m < MB; ++m)
      for (int c = 0; c < kGemvCols; ++c)
        sums[m * kGemvCols + c] += x[size_t(m) * K + k] * load(w[c][k]);
}

template <class T>
HYBRID_AVX2_TARGET void block(const void* x, const void* w, int K, int rows, int cols,
                              float* sums) {
  const T* wr[kGemvCols];
  for (int c = 0; c < kGemvCols; ++c)
    wr[c] = static_cast<const T*>(w) + size_t(c < cols ? c : 0) * K;
  const auto* xf = static_cast<const float*>(x);
  int m = 0;
  const T* next = wr[0] + size_t(kPrefetchBlocks * kGemvCols) * K;
  for (; m + 2 <= rows; m += 2)
    rows_block<2>(xf + size_t(m) * K, wr, next, K, sums + m * kGemvCols);
  if (m < rows) rows_block<1>(xf + size_t(m) * K, wr, next, K, sums + m * kGemvCols);
}

}  // namespace

BlockFn avx2_block(DType w_dt) {
  return dispatch_dtype(w_dt, [](auto tag) -> BlockFn { return &block<decltype(tag)>; });
}

}  // namespace hybrid::kernels::cpu::gemv_detail
