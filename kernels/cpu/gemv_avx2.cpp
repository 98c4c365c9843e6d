// gemv's AVX2 loops (gemv_kernels.h): 8 fp32 lanes, FMA, F16C. One weight row
// against up to two input rows at a time: 2 × 4 accumulators, 4 weight vectors
// and one input vector fill 13 of the 16 ymm registers; from kPairRows input
// rows on, two weight rows against four input rows at a time. fp16/bf16 weights are
// widened in registers (bf16 is the top half of an fp32); the input is fp32
// already. K's tail (< 8) is scalar, added to lane 0.
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

// One weight row against MB input rows: each input row's dot product as one
// vector of partial sums in dots[m].
template <int MB, class T>
HYBRID_AVX2_TARGET void row_dots(const float* x, const T* w, int K, __m256* dots) {
  __m256 acc[MB][kSteps];
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
    for (int u = 0; u < kSteps; ++u) acc[m][u] = _mm256_setzero_ps();
  int k = 0;
  for (; k + 8 * kSteps <= K; k += 8 * kSteps) {
    prefetch_ahead(w + k, kSteps * 8 * sizeof(T));
    __m256 wv[kSteps];
#pragma GCC unroll 4
    for (int u = 0; u < kSteps; ++u) wv[u] = load8(w + k + 8 * u);
#pragma GCC unroll 2
    for (int m = 0; m < MB; ++m)
#pragma GCC unroll 4
      for (int u = 0; u < kSteps; ++u)
        acc[m][u] =
            _mm256_fmadd_ps(wv[u], _mm256_loadu_ps(x + size_t(m) * K + k + 8 * u), acc[m][u]);
  }
  for (; k + 8 <= K; k += 8) {
    const __m256 wv = load8(w + k);
#pragma GCC unroll 2
    for (int m = 0; m < MB; ++m)
      acc[m][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + size_t(m) * K + k), acc[m][0]);
  }
  for (int m = 0; m < MB; ++m) {
    float tail = 0.0f;
    for (int kk = k; kk < K; ++kk) tail += x[size_t(m) * K + kk] * load(w[kk]);
    dots[m] = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(acc[m][0], acc[m][1]), _mm256_add_ps(acc[m][2], acc[m][3])),
        _mm256_setr_ps(tail, 0, 0, 0, 0, 0, 0, 0));
  }
}

// Two weight rows against MB (<= 4) input rows, each input vector loaded once
// for both (gemv_kernels.h's kPairRows): 2 × 4 accumulators, two weight
// vectors and one input vector. dots0[m] and dots1[m]: input row m against w0
// and w1.
template <int MB, class T>
HYBRID_AVX2_TARGET void pair_dots(const float* x, const T* w0, const T* w1, int K, __m256* dots0,
                                  __m256* dots1) {
  __m256 acc0[MB], acc1[MB];
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m) acc0[m] = acc1[m] = _mm256_setzero_ps();
  int k = 0;
  for (; k + 8 <= K; k += 8) {
    if (((k * sizeof(T)) & 63) == 0) {  // a line of each row a line consumed
      _mm_prefetch(reinterpret_cast<const char*>(w0 + k) + kPairPrefetchAhead, _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(w1 + k) + kPairPrefetchAhead, _MM_HINT_T1);
    }
    const __m256 a = load8(w0 + k), b = load8(w1 + k);
#pragma GCC unroll 4
    for (int m = 0; m < MB; ++m) {
      const __m256 xv = _mm256_loadu_ps(x + size_t(m) * K + k);
      acc0[m] = _mm256_fmadd_ps(a, xv, acc0[m]);
      acc1[m] = _mm256_fmadd_ps(b, xv, acc1[m]);
    }
  }
  for (int m = 0; m < MB; ++m) {
    float t0 = 0.0f, t1 = 0.0f;
    for (int kk = k; kk < K; ++kk) {
      t0 += x[size_t(m) * K + kk] * load(w0[kk]);
      t1 += x[size_t(m) * K + kk] * load(w1[kk]);
    }
    dots0[m] = _mm256_add_ps(acc0[m], _mm256_setr_ps(t0, 0, 0, 0, 0, 0, 0, 0));
    dots1[m] = _mm256_add_ps(acc1[m], _mm256_setr_ps(t1, 0, 0, 0, 0, 0, 0, 0));
  }
}

// Each weight row of the block in memory order (one linear stream) against the
// input rows two at a time.
template <class T>
HYBRID_AVX2_TARGET void rows_block(const float* x, const T* w, int K, int rows, int cols,
                                   __m256 (*dots)[kGemvCols]) {
  __m256 d[2];
  for (int c = 0; c < cols; ++c) {
    const T* wc = w + size_t(c) * K;
    int m = 0;
    for (; m + 2 <= rows; m += 2) {
      row_dots<2>(x + size_t(m) * K, wc, K, d);
      dots[m][c] = d[0];
      dots[m + 1][c] = d[1];
    }
    if (m < rows) {
      row_dots<1>(x + size_t(m) * K, wc, K, d);
      dots[m][c] = d[0];
    }
  }
}

// Every input row against the block's weight rows two at a time, up to four
// input rows a pass.
template <class T>
HYBRID_AVX2_TARGET void pairs_block(const float* x, const T* w, int K, int rows, int cols,
                                    __m256 (*dots)[kGemvCols]) {
  constexpr decltype(&pair_dots<1, T>) kPairs[] = {&pair_dots<1, T>, &pair_dots<2, T>,
                                                   &pair_dots<3, T>, &pair_dots<4, T>};
  __m256 d0[4], d1[4];
  for (int c = 0; c < cols; c += 2)
    for (int m = 0; m < rows; m += 4) {
      const int mb = std::min(rows - m, 4);
      kPairs[mb - 1](x + size_t(m) * K, w + size_t(c) * K,
                     w + size_t(std::min(c + 1, cols - 1)) * K, K, d0, d1);
      for (int i = 0; i < mb; ++i) {
        dots[m + i][c] = d0[i];
        if (c + 1 < cols) dots[m + i][c + 1] = d1[i];
      }
    }
}

template <class T>
HYBRID_AVX2_TARGET void block(const void* x, const void* w, int K, int rows, int cols,
                              float* sums) {
  const auto* xf = static_cast<const float*>(x);
  // dots[m][c]: input row m against weight row c; rows past cols stay zero.
  __m256 dots[kGemvMaxRows][kGemvCols];
  for (int m = 0; m < rows; ++m)
    for (int c = 0; c < kGemvCols; ++c) dots[m][c] = _mm256_setzero_ps();
  if (rows >= kPairRows)
    pairs_block(xf, static_cast<const T*>(w), K, rows, cols, dots);
  else
    rows_block(xf, static_cast<const T*>(w), K, rows, cols, dots);
  for (int m = 0; m < rows; ++m)
    _mm_storeu_ps(sums + m * kGemvCols, sum4(dots[m][0], dots[m][1], dots[m][2], dots[m][3]));
}

}  // namespace

BlockFn avx2_block(DType w_dt) {
  return dispatch_dtype(w_dt, [](auto tag) -> BlockFn { return &block<decltype(tag)>; });
}

}  // namespace hybrid::kernels::cpu::gemv_detail
