// The inner loops of gemv (gemv.h), one set per instruction set: each computes
// the dot products of a block of kGemvCols weight rows with every input row, so
// that the block is read from memory once whatever the number of rows.
#pragma once

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu::gemv_detail {

// Weight rows (output columns) per block: four rows stream side by side, which
// keeps each loaded input vector in use for four FMAs.
inline constexpr int kGemvCols = 4;

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
