// The inner loops of gemv (gemv.h), one set per instruction set: each computes
// the dot products of a block of kGemvCols weight rows with every input row, so
// that the block is read from memory once whatever the number of rows.
#pragma once

#include <xmmintrin.h>

#include <cstddef>

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu::gemv_detail {

// Weight rows (output columns) per block: four rows stream side by side, which
// keeps each loaded input vector in use for four FMAs.
inline constexpr int kGemvCols = 4;

// The weights kPrefetchBlocks blocks ahead (blocks of kGemvCols rows are
// contiguous) are prefetched into L2 at the pace this block's are read: reading
// element k of each row, the same share of that block (offset k · kGemvCols ·
// element size). Four rows of K = 768 are short streams (1.5 KiB in bf16) that
// the hardware prefetchers hardly learn before they end: one thread read
// GPT-2's weights at 11 GB/s without it, 19 with it (bf16; fp32 15 -> 21).
// Into L1 (T0) was slower; one, two and four blocks ahead alike within the
// noise of a shared machine (the README's figures ran with four).
inline constexpr int kPrefetchBlocks = 4;
inline void prefetch_next(const void* next_block, size_t offset, size_t bytes) {
  const char* p = static_cast<const char*>(next_block) + offset;
  for (size_t b = 0; b < bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T1);
}

// sums[m · kGemvCols + c] = Σ_k x[m·K + k] · w[c·K + k] for m < rows (≤ kGemvMaxRows)
// and c < kGemvCols; weight rows c ≥ cols (the matrix's last block) repeat row 0
// and their sums are not read. x is fp32, except for avx512bf16 (bf16).
using BlockFn = void (*)(const void* x, const void* w, int K, int rows, int cols, float* sums);

// The weights' dtype chooses the loads: fp32 as they are, fp16/bf16 widened in
// registers.
BlockFn avx2_block(DType w_dt);
BlockFn avx512_block(DType w_dt);
BlockFn avx512bf16_block();  // bf16 input and weights, VDPBF16PS

}  // namespace hybrid::kernels::cpu::gemv_detail
