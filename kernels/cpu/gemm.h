// The CPU GEMM (oneDNN matmul or OpenBLAS), shared by the Backend::gemm op, matmul and attention.
#pragma once

#include <string>

#include "kernels/cpu/gemm_provider.h"
#include "kernels/dtype.h"

namespace hybrid::kernels::cpu {

// C[M,N] = alpha · op(A) · op(B) + beta · C (+ bias[N] on every row), row-major, all
// operands in dt, fp32 accumulation. A bias needs alpha == 1 and beta == 0. Safe to
// call from several threads at once, and from inside an OpenMP parallel region
// (oneDNN then runs single-threaded in the calling thread). Runs on the provider
// the routes give the shape (gemm_provider.h).
void gemm(DType dt, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
          int lda, const void* B, int ldb, float beta, void* C, int ldc,
          const void* bias = nullptr);

// The same on a given provider, whatever the routes say (an unavailable OpenBLAS
// means oneDNN). The selection measures through it.
void gemm_on(GemmProvider provider, DType dt, bool trans_a, bool trans_b, int M, int N, int K,
             float alpha, const void* A, int lda, const void* B, int ldb, float beta, void* C,
             int ldc, const void* bias = nullptr);

// True when oneDNN runs dt natively on this CPU (bf16 with AVX512_BF16, fp16 with
// AVX512_FP16); otherwise fp16/bf16 operands are converted to fp32 scratch first.
bool gemm_native(DType dt);

// The oneDNN implementation chosen for an fp32/dt problem of this shape, e.g.
// "gemm:jit" or "brg:avx512_core" (for benchmarks and docs), or "fp32 fallback".
std::string gemm_impl_name(DType dt, bool trans_a, bool trans_b, int M, int N, int K);

}  // namespace hybrid::kernels::cpu
