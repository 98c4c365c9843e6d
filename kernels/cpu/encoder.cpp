// Token + position embedding.
//
// forward:  one pass per (b, t) row: out = wte[token] + wpe[t], rows in parallel.
// backward: dwte[token] += dout and dwpe[t] += Σ_b dout[b, t]. Tokens repeat, so a
//           row-parallel scatter into dwte would race; instead each thread owns a
//           range of channels and walks every row (no atomics, deterministic).
#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

template <class T>
void encoder_fwd(T* out, const int32_t* tokens, const T* wte, const T* wpe, int B, int T_, int C) {
#pragma omp parallel for schedule(static) if (size_t(B) * T_ * C > cpu::kParallelMin)
  for (int bt = 0; bt < B * T_; ++bt) {
    float* a = cpu::thread_scratch(0, size_t(C));
    float* p = cpu::thread_scratch(1, size_t(C));
    const int t = bt % T_;
    const float* e = cpu::view_f32(wte + size_t(tokens[bt]) * C, a, size_t(C));
    const float* q = cpu::view_f32(wpe + size_t(t) * C, p, size_t(C));
    float* o = cpu::thread_scratch(2, size_t(C));
    for (int c = 0; c < C; ++c) o[c] = e[c] + q[c];
    cpu::from_f32(out + size_t(bt) * C, o, size_t(C));
  }
}

template <class T>
void encoder_bwd(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int B, int T_, int C) {
  constexpr int kCols = 64;
  const int blocks = (C + kCols - 1) / kCols;
  if (dwte) {
#pragma omp parallel for schedule(static) if (size_t(B) * T_ * C > cpu::kParallelMin)
    for (int blk = 0; blk < blocks; ++blk) {
      const int c0 = blk * kCols, nc = std::min(kCols, C - c0);
      float g[kCols], w[kCols];
      for (int bt = 0; bt < B * T_; ++bt) {
        T* dst = dwte + size_t(tokens[bt]) * C + c0;
        const float* d = cpu::view_f32(dout + size_t(bt) * C + c0, g, size_t(nc));
        cpu::to_f32(w, dst, size_t(nc));
        for (int c = 0; c < nc; ++c) w[c] += d[c];
        cpu::from_f32(dst, w, size_t(nc));
      }
    }
  }
  if (dwpe) {
#pragma omp parallel for schedule(static) if (size_t(B) * T_ * C > cpu::kParallelMin)
    for (int t = 0; t < T_; ++t) {
      float* acc = cpu::thread_scratch(0, size_t(C));
      float* g = cpu::thread_scratch(1, size_t(C));
      cpu::to_f32(acc, dwpe + size_t(t) * C, size_t(C));
      for (int b = 0; b < B; ++b) {
        const float* d = cpu::view_f32(dout + (size_t(b) * T_ + t) * C, g, size_t(C));
        for (int c = 0; c < C; ++c) acc[c] += d[c];
      }
      cpu::from_f32(dwpe + size_t(t) * C, acc, size_t(C));
    }
  }
}

}  // namespace

void CpuBackend::encoder_forward(DType dt, void* out, const int32_t* tokens, const void* wte,
                                 const void* wpe, int B, int T, int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    encoder_fwd(static_cast<S*>(out), tokens, static_cast<const S*>(wte),
                static_cast<const S*>(wpe), B, T, C);
  });
}

void CpuBackend::encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                  const int32_t* tokens, int B, int T, int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    encoder_bwd(static_cast<S*>(dwte), static_cast<S*>(dwpe), static_cast<const S*>(dout), tokens,
                B, T, C);
  });
}

}  // namespace hybrid::kernels
