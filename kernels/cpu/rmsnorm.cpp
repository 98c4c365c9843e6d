// RMSNorm over the last dimension (the Llama family), fp32 statistics.
//
// forward:  per row, one pass for mean(x²), one fused scale pass; rstd saved.
// backward: with x̂ = x·rstd and g = dout·weight per element,
//           dinp += rstd·(g − x̂·mean(g·x̂)), dweight += Σ_rows dout·x̂ (per-thread
//           fp32 partials, summed once at the end: no atomics).
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

template <class T>
void rmsnorm_fwd(T* out, float* rstd, const T* inp, const T* weight, int N, int C, float eps) {
  float* w = cpu::thread_scratch(0, size_t(C));
  const float* wf = cpu::view_f32(weight, w, size_t(C));
#pragma omp parallel for schedule(static) if (size_t(N) * C > cpu::kParallelMin)
  for (int i = 0; i < N; ++i) {
    float* xb = cpu::thread_scratch(2, size_t(C));
    float* o = cpu::thread_scratch(3, size_t(C));
    const float* x = cpu::view_f32(inp + size_t(i) * C, xb, size_t(C));
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; ++c) ss += x[c] * x[c];
    const float s = 1.0f / std::sqrt(ss / float(C) + eps);
    for (int c = 0; c < C; ++c) o[c] = x[c] * s * wf[c];
    cpu::from_f32(out + size_t(i) * C, o, size_t(C));
    if (rstd) rstd[i] = s;
  }
}

template <class T>
void rmsnorm_bwd(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                 const float* rstd, int N, int C) {
  float* wbuf = cpu::thread_scratch(0, size_t(C));
  const float* wf = cpu::view_f32(weight, wbuf, size_t(C));
  const bool parallel = size_t(N) * C > cpu::kParallelMin;
  const int threads = parallel ? omp_get_max_threads() : 1;
  std::vector<float> partial(size_t(threads) * C, 0.0f);  // per-thread dweight
#pragma omp parallel num_threads(threads) if (parallel)
  {
    float* dw_acc = partial.data() + size_t(omp_get_thread_num()) * C;
    float* xb = cpu::thread_scratch(2, size_t(C));
    float* gb = cpu::thread_scratch(3, size_t(C));
    float* di = cpu::thread_scratch(4, size_t(C));
#pragma omp for schedule(static)
    for (int i = 0; i < N; ++i) {
      const float* x = cpu::view_f32(inp + size_t(i) * C, xb, size_t(C));
      const float* g = cpu::view_f32(dout + size_t(i) * C, gb, size_t(C));
      const float s = rstd[i];
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int c = 0; c < C; ++c) dot += g[c] * wf[c] * x[c] * s;
      const float dot_mean = dot / float(C);
      for (int c = 0; c < C; ++c) dw_acc[c] += g[c] * x[c] * s;
      if (dinp) {
        cpu::to_f32(di, dinp + size_t(i) * C, size_t(C));
        for (int c = 0; c < C; ++c) di[c] += s * (g[c] * wf[c] - x[c] * s * dot_mean);
        cpu::from_f32(dinp + size_t(i) * C, di, size_t(C));
      }
    }
  }
  if (!dweight) return;
  for (int t = 1; t < threads; ++t)
    for (int c = 0; c < C; ++c) partial[c] += partial[size_t(t) * C + c];
  float* cur = cpu::thread_scratch(1, size_t(C));
  cpu::to_f32(cur, dweight, size_t(C));
  for (int c = 0; c < C; ++c) cur[c] += partial[c];
  cpu::from_f32(dweight, cur, size_t(C));
}

}  // namespace

void CpuBackend::rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp,
                                 const void* weight, int N, int C, float eps) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    rmsnorm_fwd(static_cast<T*>(out), rstd, static_cast<const T*>(inp),
                static_cast<const T*>(weight), N, C, eps);
  });
}

void CpuBackend::rmsnorm_backward(DType dt, void* dinp, void* dweight, const void* dout,
                                  const void* inp, const void* weight, const float* rstd, int N,
                                  int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    rmsnorm_bwd(static_cast<T*>(dinp), static_cast<T*>(dweight), static_cast<const T*>(dout),
                static_cast<const T*>(inp), static_cast<const T*>(weight), rstd, N, C);
  });
}

}  // namespace hybrid::kernels
