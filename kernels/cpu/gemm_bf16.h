// Our own bf16 GEMM for CPUs with AVX512_BF16: bf16 operands, fp32 accumulation
// through VDPBF16PS (two bf16 products per fp32 lane per instruction). oneDNN
// 2.6's bf16 kernels run slower than OpenBLAS's fp32 on a Sapphire Rapids Xeon
// (docs/kernels.md), so bf16 would not pay without one of our own.
#pragma once

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu {

// The CPU has AVX-512 F/BW/VL and AVX512_BF16 (checked once, at run time: the
// kernel is compiled for them with target attributes, whatever -march says), and
// no cap below AVX512_CORE_BF16 is set in ONEDNN_MAX_CPU_ISA: the kernel keeps
// oneDNN's cap, so that one variable runs every GEMM on the AVX2 path
// (scripts/portable-check.sh).
bool bf16_kernel_available();

// Whether a ONEDNN_MAX_CPU_ISA value (nullptr: unset) allows AVX512_BF16.
bool bf16_isa_allowed(const char* max_cpu_isa);

// C[M,N] = alpha · op(A) · op(B) + beta · C (+ bias[N]), row-major bf16, fp32
// accumulation, C rounded to nearest even once. Only when bf16_kernel_available().
// Threads: OpenMP over 32-column panels of C; from inside a parallel region it
// runs on the calling thread.
void gemm_bf16_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16_t* A,
                      int lda, const bf16_t* B, int ldb, float beta, bf16_t* C, int ldc,
                      const bf16_t* bias);

}  // namespace hybrid::kernels::cpu
