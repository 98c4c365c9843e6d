// gemv's AVX-512 loops (gemv_kernels.h), compiled for their targets with
// attributes and chosen at run time (gemv.cpp), whatever -march says.
// - avx512: 16 fp32 lanes; one weight row against up to four input rows at a
//   time (4 × 4 accumulators, 4 weight vectors, one input vector: 21 of 32 zmm
//   registers); fp16/bf16 weights widened in registers, the input fp32. From
//   kPairRows input rows on, two weight rows against all of them (2 × 8
//   accumulators, each input vector loaded once for both rows).
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

// acc[u] += w[u] · x[u·16 ...] for the kSteps vectors of one step.
HYBRID_AVX512_TARGET inline void fma_step(__m512* acc, const __m512* w, const float* x) {
#pragma GCC unroll 4
  for (int u = 0; u < kSteps; ++u)
    acc[u] = _mm512_fmadd_ps(w[u], _mm512_loadu_ps(x + 16 * u), acc[u]);
}

// One weight row against input rows M... (a pack expansion, so every
// accumulator index is a constant and GCC keeps them in registers; loops over
// the rows kept the array in memory, stored on every step): each input row's
// dot product as one vector of partial sums in dots[M].
template <class T, int... M>
HYBRID_AVX512_TARGET void row_dots(const float* x, const T* w, int K, __m512* dots,
                                   std::integer_sequence<int, M...>) {
  __m512 acc[sizeof...(M)][kSteps] = {};
  int k = 0;
  for (; k + 16 * kSteps <= K; k += 16 * kSteps) {
    prefetch_ahead(w + k, kSteps * 16 * sizeof(T));
    __m512 wv[kSteps];
#pragma GCC unroll 4
    for (int u = 0; u < kSteps; ++u) wv[u] = load16(w + k + 16 * u, __mmask16(0xffff));
    (fma_step(acc[M], wv, x + size_t(M) * K + k), ...);
  }
  for (; k < K; k += 16) {
    const __mmask16 mask = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
    const __m512 wv = load16(w + k, mask);
    ((acc[M][0] =
          _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, x + size_t(M) * K + k), acc[M][0])),
     ...);
  }
  ((dots[M] =
        _mm512_add_ps(_mm512_add_ps(acc[M][0], acc[M][1]), _mm512_add_ps(acc[M][2], acc[M][3]))),
   ...);
}

template <int MB, class T>
HYBRID_AVX512_TARGET void dots_of(const float* x, const T* w, int K, __m512* dots) {
  row_dots(x, w, K, dots, std::make_integer_sequence<int, MB>{});
}

// Two weight rows against input rows M... at once: each input vector loaded
// once for both rows, so an FMA needs 0.5 + 1/(2·rows) loads instead of the
// 1 + 1/rows of row_dots (past four rows the loads, not the weights' stream,
// set the pace). dots0[m] and dots1[m]: input row m against w0 and w1.
template <class T, int... M>
HYBRID_AVX512_TARGET void pair_dots(const float* x, const T* w0, const T* w1, int K, __m512* dots0,
                                    __m512* dots1, std::integer_sequence<int, M...>) {
  __m512 acc0[sizeof...(M)] = {}, acc1[sizeof...(M)] = {};
  for (int k = 0; k < K; k += 16) {
    const __mmask16 mask = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
    if (((k * sizeof(T)) & 63) == 0) {  // a line of each row a line consumed
      _mm_prefetch(reinterpret_cast<const char*>(w0 + k) + kPairPrefetchAhead, _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(w1 + k) + kPairPrefetchAhead, _MM_HINT_T1);
    }
    const __m512 a = load16(w0 + k, mask), b = load16(w1 + k, mask);
    ((acc0[M] = _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(mask, x + size_t(M) * K + k), acc0[M]),
      acc1[M] = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mask, x + size_t(M) * K + k), acc1[M])),
     ...);
  }
  ((dots0[M] = acc0[M], dots1[M] = acc1[M]), ...);
}

template <int MB, class T>
HYBRID_AVX512_TARGET void pair_dots_of(const float* x, const T* w0, const T* w1, int K,
                                       __m512* dots0, __m512* dots1) {
  pair_dots(x, w0, w1, K, dots0, dots1, std::make_integer_sequence<int, MB>{});
}

// The dot products of one block (gemv_kernels.h's BlockFn) from its loops:
// dots[rows] (row_dots, up to 4 input rows) and pairs[rows] (pair_dots).
template <class X, class W, class Dots, class Pairs>
HYBRID_AVX512_TARGET void block_of(const X* x, const W* w, int K, int rows, int cols, float* sums,
                                   const Dots* dots_fn, const Pairs* pairs_fn) {
  // dots[m][c]: input row m against weight row c; columns past cols are zero.
  // Only the rows in use are set: zeroing all 2 KiB took 2 % of a decode step.
  __m512 dots[kGemvMaxRows][kGemvCols];
  for (int m = 0; m < rows; ++m)
    for (int c = cols; c < kGemvCols; ++c) dots[m][c] = _mm512_setzero_ps();
  if (rows >= kPairRows) {
    __m512 d0[kGemvMaxRows], d1[kGemvMaxRows];
    for (int c = 0; c < cols; c += 2) {
      pairs_fn[rows - 1](x, w + size_t(c) * K, w + size_t(std::min(c + 1, cols - 1)) * K, K, d0,
                         d1);
      for (int m = 0; m < rows; ++m) dots[m][c] = d0[m];
      if (c + 1 < cols)
        for (int m = 0; m < rows; ++m) dots[m][c + 1] = d1[m];
    }
  } else {
    __m512 d[4];
    for (int c = 0; c < cols; ++c)  // the block's rows in memory order: one linear stream
      for (int m = 0; m < rows; m += 4) {
        const int mb = std::min(rows - m, 4);
        dots_fn[mb - 1](x + size_t(m) * K, w + size_t(c) * K, K, d);
        for (int i = 0; i < mb; ++i) dots[m + i][c] = d[i];
      }
  }
  for (int m = 0; m < rows; ++m)
    _mm_storeu_ps(sums + m * kGemvCols, sum4(dots[m][0], dots[m][1], dots[m][2], dots[m][3]));
}

// One input row (a batch-1 decode step), the common case: the block's weight
// rows as direct calls of Dots, with the partial sums kept in registers (through
// block_of's table each weight row was an indirect call, a vzeroupper and a
// spill). Always inlined, so that it compiles for its caller's target
// (AVX512_BF16 for bf16_block), where Dots may be inlined too.
template <auto Dots, class X, class W>
HYBRID_AVX512_TARGET __attribute__((always_inline)) inline void one_row_block(const X* x,
                                                                              const W* w, int K,
                                                                              int cols,
                                                                              float* sums) {
  __m512 d[kGemvCols] = {};
  for (int c = 0; c < cols; ++c) Dots(x, w + size_t(c) * K, K, &d[c]);
  _mm_storeu_ps(sums, sum4(d[0], d[1], d[2], d[3]));
}

template <class T>
HYBRID_AVX512_TARGET void block(const void* x, const void* w, int K, int rows, int cols,
                                float* sums) {
  if (rows == 1)
    return one_row_block<&dots_of<1, T>>(static_cast<const float*>(x), static_cast<const T*>(w), K,
                                         cols, sums);
  constexpr decltype(&dots_of<1, T>) kDots[] = {&dots_of<1, T>, &dots_of<2, T>, &dots_of<3, T>,
                                                &dots_of<4, T>};
  constexpr decltype(&pair_dots_of<1, T>) kPairs[] = {
      &pair_dots_of<1, T>, &pair_dots_of<2, T>, &pair_dots_of<3, T>, &pair_dots_of<4, T>,
      &pair_dots_of<5, T>, &pair_dots_of<6, T>, &pair_dots_of<7, T>, &pair_dots_of<8, T>};
  block_of(static_cast<const float*>(x), static_cast<const T*>(w), K, rows, cols, sums, kDots,
           kPairs);
}

// acc[u] += the bf16 pair products of w[u] and x[u·32 ...].
HYBRID_AVX512BF16_TARGET inline void dot_step(__m512* acc, const __m512bh* w, const uint16_t* x) {
#pragma GCC unroll 4
  for (int u = 0; u < kSteps; ++u)
    acc[u] = _mm512_dpbf16_ps(acc[u], (__m512bh)_mm512_loadu_si512(x + 32 * u), w[u]);
}

HYBRID_AVX512BF16_TARGET inline __m512bh load32(const uint16_t* p, __mmask32 mask) {
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// row_dots on bf16 pairs: one VDPBF16PS per input row and weight vector
// covers 32 k.
template <int... M>
HYBRID_AVX512BF16_TARGET void bf16_row_dots(const uint16_t* x, const uint16_t* w, int K,
                                            __m512* dots, std::integer_sequence<int, M...>) {
  __m512 acc[sizeof...(M)][kSteps] = {};
  int k = 0;
  for (; k + 32 * kSteps <= K; k += 32 * kSteps) {
    prefetch_ahead(w + k, kSteps * 64);
    __m512bh wv[kSteps];
#pragma GCC unroll 4
    for (int u = 0; u < kSteps; ++u) wv[u] = load32(w + k + 32 * u, __mmask32(~0u));
    (dot_step(acc[M], wv, x + size_t(M) * K + k), ...);
  }
  for (; k < K; k += 32) {
    const __mmask32 mask = K - k >= 32 ? __mmask32(~0u) : __mmask32((1u << (K - k)) - 1);
    const __m512bh wv = load32(w + k, mask);
    ((acc[M][0] = _mm512_dpbf16_ps(acc[M][0], load32(x + size_t(M) * K + k, mask), wv)), ...);
  }
  ((dots[M] =
        _mm512_add_ps(_mm512_add_ps(acc[M][0], acc[M][1]), _mm512_add_ps(acc[M][2], acc[M][3]))),
   ...);
}

template <int MB>
HYBRID_AVX512BF16_TARGET void bf16_dots_of(const uint16_t* x, const uint16_t* w, int K,
                                           __m512* dots) {
  bf16_row_dots(x, w, K, dots, std::make_integer_sequence<int, MB>{});
}

// pair_dots on bf16 pairs.
template <int... M>
HYBRID_AVX512BF16_TARGET void bf16_pair_dots(const uint16_t* x, const uint16_t* w0,
                                             const uint16_t* w1, int K, __m512* dots0,
                                             __m512* dots1, std::integer_sequence<int, M...>) {
  __m512 acc0[sizeof...(M)] = {}, acc1[sizeof...(M)] = {};
  for (int k = 0; k < K; k += 32) {
    const __mmask32 mask = K - k >= 32 ? __mmask32(~0u) : __mmask32((1u << (K - k)) - 1);
    _mm_prefetch(reinterpret_cast<const char*>(w0 + k) + kPairPrefetchAhead, _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(w1 + k) + kPairPrefetchAhead, _MM_HINT_T1);
    const __m512bh a = load32(w0 + k, mask), b = load32(w1 + k, mask);
    ((acc0[M] = _mm512_dpbf16_ps(acc0[M], load32(x + size_t(M) * K + k, mask), a),
      acc1[M] = _mm512_dpbf16_ps(acc1[M], load32(x + size_t(M) * K + k, mask), b)),
     ...);
  }
  ((dots0[M] = acc0[M], dots1[M] = acc1[M]), ...);
}

template <int MB>
HYBRID_AVX512BF16_TARGET void bf16_pair_dots_of(const uint16_t* x, const uint16_t* w0,
                                                const uint16_t* w1, int K, __m512* dots0,
                                                __m512* dots1) {
  bf16_pair_dots(x, w0, w1, K, dots0, dots1, std::make_integer_sequence<int, MB>{});
}

HYBRID_AVX512BF16_TARGET void bf16_block(const void* x, const void* w, int K, int rows, int cols,
                                         float* sums) {
  if (rows == 1)
    return one_row_block<&bf16_dots_of<1>>(static_cast<const uint16_t*>(x),
                                           static_cast<const uint16_t*>(w), K, cols, sums);
  constexpr decltype(&bf16_dots_of<1>) kDots[] = {&bf16_dots_of<1>, &bf16_dots_of<2>,
                                                  &bf16_dots_of<3>, &bf16_dots_of<4>};
  constexpr decltype(&bf16_pair_dots_of<1>) kPairs[] = {
      &bf16_pair_dots_of<1>, &bf16_pair_dots_of<2>, &bf16_pair_dots_of<3>, &bf16_pair_dots_of<4>,
      &bf16_pair_dots_of<5>, &bf16_pair_dots_of<6>, &bf16_pair_dots_of<7>, &bf16_pair_dots_of<8>};
  block_of(static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(w), K, rows, cols, sums,
           kDots, kPairs);
}

}  // namespace

BlockFn avx512_block(DType w_dt) {
  return dispatch_dtype(w_dt, [](auto tag) -> BlockFn { return &block<decltype(tag)>; });
}

BlockFn avx512bf16_block() { return &bf16_block; }

}  // namespace hybrid::kernels::cpu::gemv_detail
