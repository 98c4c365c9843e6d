// Linear layers (PyTorch layout: weight [out=N, in=K]) on top of cpu::gemm.
//
// forward:  out = inp · weightᵀ + bias — the bias is fused into the oneDNN
//           primitive, so out is written once. At a few rows (a decode step)
//           it runs on cpu::gemv instead, which streams the weight once.
// backward: dinp += dout · weight and dweight += doutᵀ · inp are GEMMs with
//           beta = 1 (the "+=" contract costs nothing extra); dbias += Σ_rows dout
//           is a column reduction split across threads by column ranges so no
//           two threads write the same output.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

// dbias[j] += Σ_i dout[i, j] over M rows of N columns.
template <class T>
void bias_backward(T* dbias, const T* dout, int M, int N) {
  constexpr int kCols = 128;  // fp32 accumulators in registers/L1; enough blocks to balance
  const int blocks = (N + kCols - 1) / kCols;
#pragma omp parallel for schedule(static) if (size_t(M) * N > cpu::kParallelMin)
  for (int blk = 0; blk < blocks; ++blk) {
    const int j0 = blk * kCols, nj = std::min(kCols, N - j0);
    float acc[kCols] = {};
    float row[kCols];
    for (int i = 0; i < M; ++i) {
      const float* r = cpu::view_f32(dout + size_t(i) * N + j0, row, size_t(nj));
      for (int j = 0; j < nj; ++j) acc[j] += r[j];
    }
    float cur[kCols];
    cpu::to_f32(cur, dbias + j0, size_t(nj));
    for (int j = 0; j < nj; ++j) cur[j] += acc[j];
    cpu::from_f32(dbias + j0, cur, size_t(nj));
  }
}

}  // namespace

void CpuBackend::matmul_forward(DType dt, void* out, const void* inp, const void* weight,
                                const void* bias, int M, int K, int N) {
  cpu::GemvIsa isa;
  if (M >= 1 && M <= cpu::kGemvMaxRows && cpu::gemv_isa_for(dt, &isa))
    return cpu::gemv_on(isa, dt, out, inp, weight, bias, M, K, N);
  cpu::gemm(dt, false, true, M, N, K, 1.0f, inp, K, weight, K, 0.0f, out, N, bias);
}

void CpuBackend::matmul_backward(DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                                 const void* inp, const void* weight, int M, int K, int N) {
  if (dinp) cpu::gemm(dt, false, false, M, K, N, 1.0f, dout, N, weight, K, 1.0f, dinp, K);
  if (dweight) cpu::gemm(dt, true, false, N, K, M, 1.0f, dout, N, inp, K, 1.0f, dweight, K);
  if (dbias) {
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      bias_backward(static_cast<T*>(dbias), static_cast<const T*>(dout), M, N);
    });
  }
}

}  // namespace hybrid::kernels
