// The linear layer at a few rows (a decode step: one token per sequence), as
// matrix–vector products that stream each weight once at memory bandwidth.
//
// A GEMM library packs the weight into panels before it multiplies; at M = 1..8
// rows that packing is a second pass over a weight that is read only once, so
// a decode step ran at ~70 % of the read bandwidth (issue 29). Here each
// output column is a dot product of one weight row with the input rows, read
// straight from the weight's [N, K] layout in memory order (one linear stream
// a thread, gemv_kernels.h), the columns split across the threads.
#pragma once

#include <string_view>

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu {

// matmul_forward at this many rows or fewer runs on gemv (cpu_backend's
// matmul.cpp): a decode step's B rows. Training's micro-batches are B·T rows,
// far more, and keep the GEMM (and its numerics) as they were.
inline constexpr int kGemvMaxRows = 8;

// The instruction sets gemv is written for, chosen at run time (the best the
// CPU has, capped like oneDNN's by ONEDNN_MAX_CPU_ISA, see gemm_bf16.h):
// avx2 (8 lanes, fp16/bf16 weights widened in registers), avx512 (16 lanes,
// the same), avx512bf16 (bf16 only: VDPBF16PS on bf16 inputs and weights).
enum class GemvIsa { avx2, avx512, avx512bf16 };
std::string_view gemv_isa_name(GemvIsa isa);

// Whether a ONEDNN_MAX_CPU_ISA value (nullptr: unset) allows isa.
bool gemv_isa_allowed(GemvIsa isa, const char* max_cpu_isa);
// Whether this CPU has isa and the environment's cap allows it (checked once).
bool gemv_isa_available(GemvIsa isa);
// The isa gemv runs dt on here (avx512bf16 only for bf16); false when the CPU
// has not even AVX2 (then the GEMM does the work).
bool gemv_isa_for(DType dt, GemvIsa* isa);

// out[M,N] = inp[M,K] · weight[N,K]ᵀ + bias[N] (bias may be null), all
// contiguous in dt, fp32 accumulation, out rounded once. 1 <= M <=
// kGemvMaxRows. Threads: OpenMP over column ranges; from inside a parallel
// region it runs on the calling thread.
void gemv(DType dt, void* out, const void* inp, const void* weight, const void* bias, int M, int K,
          int N);

// The same on a given isa (tests check each one the CPU has).
void gemv_on(GemvIsa isa, DType dt, void* out, const void* inp, const void* weight,
             const void* bias, int M, int K, int N);

}  // namespace hybrid::kernels::cpu
