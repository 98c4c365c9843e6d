// The inner loops of gemv (gemv.h), one set per instruction set: each computes
// the dot products of a block of kGemvCols weight rows with every input row.
//
// A block's rows lie one after another in the weight's [N, K] layout, and the
// loops read them in that order, each row once against up to four input rows
// (rows 5..8 read it again, from L1 or L2): every thread streams one linear
// region, prefetched 4 KiB ahead into L2. Measured on GPT-2 124M's weights in
// one flat buffer (AMD EPYC Zen 4, a shared machine; medians of 20 interleaved
// rounds of a throwaway benchmark), against the loops before, which read the four
// rows side by side (four short streams of K elements) with the next blocks
// prefetched: bf16 +13 % on one thread (22.0 -> 25.6 GB/s at best), +7 % on
// two; fp32 +3 % and -1 % (noise). The same loops without the prefetch gained
// nothing; prefetching 2 or 8 KiB ahead, or into L1, less. A copy of the
// weights repacked so that the four rows interleave (one linear stream too)
// read no faster than the rows in order (bf16 +13 %, fp32 +2 %), and would be
// a second copy of the weights, counted and refreshed after every training
// step: there is none.
#pragma once

#include <xmmintrin.h>

#include <cstddef>

#include "kernels/cpu/gemv.h"
#include "kernels/dtype.h"

namespace hybrid::kernels::cpu::gemv_detail {

// Weight rows (output columns) per block: one horizontal reduction (sum4)
// gives the four dot products of an input row.
inline constexpr int kGemvCols = 4;

// Vectors of a weight row read per step of the loop, each into its own
// accumulator: independent FMA chains, so the loop waits on loads only.
inline constexpr int kSteps = 4;

// Software prefetch this many bytes ahead of the weight read, into L2 (T1).
inline constexpr size_t kPrefetchAhead = 4096;
inline void prefetch_ahead(const void* at, size_t bytes) {
  if constexpr (kPrefetchAhead > 0) {
    const char* p = static_cast<const char*>(at) + kPrefetchAhead;
    for (size_t b = 0; b < bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T1);
  }
}

// From this many input rows on, the loops read two weight rows at a time and
// each input vector once for both: past four rows the loads per FMA, not the
// weights' stream, set the one-row loops' pace (GPT-2 124M's matrices at 8
// rows, fp32, in cache: 19.8 ms one row at a time, 13.1 two). At that pace a
// 4 KiB lead no longer covers the memory's latency; 12–32 KiB do. All of GPT-2
// 124M's matrices at 8 rows, 2 threads, medians of 5–8 interleaved rounds of a
// throwaway benchmark (AMD EPYC Zen 4, 2026-12-06), before -> after: AVX-512
// fp32 28.0 -> 22.0 ms, AVX512_BF16 14.3 -> 12.4; capped at AVX2, fp32
// 32.7 -> 25.7, bf16 weights 25.9 -> 24.0. Below 5 rows two at a time gained
// nothing.
inline constexpr int kPairRows = 5;
inline constexpr size_t kPairPrefetchAhead = 16384;

// sums[m · kGemvCols + c] = Σ_k x[m·K + k] · w[c·K + k] for m < rows (≤ kGemvMaxRows)
// and c < cols (≤ kGemvCols); sums of c ≥ cols are left unspecified. x is
// fp32, except for avx512bf16 (bf16).
using BlockFn = void (*)(const void* x, const void* w, int K, int rows, int cols, float* sums);

// The weights' dtype chooses the loads: fp32 as they are, fp16/bf16 widened in
// registers.
BlockFn avx2_block(DType w_dt);
BlockFn avx512_block(DType w_dt);
BlockFn avx512bf16_block();  // bf16 input and weights, VDPBF16PS

}  // namespace hybrid::kernels::cpu::gemv_detail
