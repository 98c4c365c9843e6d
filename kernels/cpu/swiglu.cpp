// SwiGLU (the Llama family's MLP activation): gate_up [N, 2I] holds the gate and
// up projections of each row (one GEMM of the concatenated weights);
// out [N, I] = silu(gate)·up, silu(g) = g·σ(g). Backward, with s = σ(g):
// dgate += dout·up·s·(1 + g·(1 − s)), dup += dout·silu(g).
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

inline float sigmoid(float x) { return 1.0f / (1.0f + cpu::fast_exp(-x)); }

template <class T>
void swiglu_fwd(T* out, const T* gate_up, int N, int I) {
#pragma omp parallel for schedule(static) if (size_t(N) * I > cpu::kParallelMin)
  for (int i = 0; i < N; ++i) {
    float* gb = cpu::thread_scratch(0, size_t(2) * I);
    float* o = cpu::thread_scratch(1, size_t(I));
    const float* gu = cpu::view_f32(gate_up + size_t(i) * 2 * I, gb, size_t(2) * I);
    for (int c = 0; c < I; ++c) o[c] = gu[c] * sigmoid(gu[c]) * gu[I + c];
    cpu::from_f32(out + size_t(i) * I, o, size_t(I));
  }
}

template <class T>
void swiglu_bwd(T* dgate_up, const T* dout, const T* gate_up, int N, int I) {
#pragma omp parallel for schedule(static) if (size_t(N) * I > cpu::kParallelMin)
  for (int i = 0; i < N; ++i) {
    float* gb = cpu::thread_scratch(0, size_t(2) * I);
    float* db = cpu::thread_scratch(1, size_t(I));
    float* d = cpu::thread_scratch(2, size_t(2) * I);
    const float* gu = cpu::view_f32(gate_up + size_t(i) * 2 * I, gb, size_t(2) * I);
    const float* g = cpu::view_f32(dout + size_t(i) * I, db, size_t(I));
    cpu::to_f32(d, dgate_up + size_t(i) * 2 * I, size_t(2) * I);
    for (int c = 0; c < I; ++c) {
      const float x = gu[c], up = gu[I + c], s = sigmoid(x);
      d[c] += g[c] * up * s * (1.0f + x * (1.0f - s));
      d[I + c] += g[c] * x * s;
    }
    cpu::from_f32(dgate_up + size_t(i) * 2 * I, d, size_t(2) * I);
  }
}

}  // namespace

void CpuBackend::swiglu_forward(DType dt, void* out, const void* gate_up, int N, int I) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    swiglu_fwd(static_cast<T*>(out), static_cast<const T*>(gate_up), N, I);
  });
}

void CpuBackend::swiglu_backward(DType dt, void* dgate_up, const void* dout, const void* gate_up,
                                 int N, int I) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    swiglu_bwd(static_cast<T*>(dgate_up), static_cast<const T*>(dout),
               static_cast<const T*>(gate_up), N, I);
  });
}

}  // namespace hybrid::kernels
