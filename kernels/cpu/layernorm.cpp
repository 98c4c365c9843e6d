// LayerNorm over the last dimension (eps = 1e-5, as GPT-2), fp32 statistics.
//
// forward:  per row, two passes over an fp32 copy (mean, then centred variance:
//           stabler than E[x²] − mean² for rows with a large mean), then one
//           fused normalise-scale-shift pass. mean and rstd are saved.
// backward: per row, the two reductions (mean of dnorm, mean of dnorm·norm) and
//           dinp in one sweep; dweight/dbias are reduced over rows into
//           per-thread fp32 partials, summed once at the end (no atomics).
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

constexpr float kEps = 1e-5f;

template <class T>
void layernorm_fwd(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias,
                   int N, int C) {
  float* w = cpu::thread_scratch(0, size_t(C));
  float* b = cpu::thread_scratch(1, size_t(C));
  const float* wf = cpu::view_f32(weight, w, size_t(C));
  const float* bf = cpu::view_f32(bias, b, size_t(C));
#pragma omp parallel for schedule(static) if (size_t(N) * C > cpu::kParallelMin)
  for (int i = 0; i < N; ++i) {
    float* xb = cpu::thread_scratch(2, size_t(C));
    float* o = cpu::thread_scratch(3, size_t(C));
    const float* x = cpu::view_f32(inp + size_t(i) * C, xb, size_t(C));
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < C; ++c) sum += x[c];
    const float m = sum / float(C);
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    const float s = 1.0f / std::sqrt(var / float(C) + kEps);
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * wf[c] + bf[c];
    cpu::from_f32(out + size_t(i) * C, o, size_t(C));
    if (mean) mean[i] = m;
    if (rstd) rstd[i] = s;
  }
}

template <class T>
void layernorm_bwd(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                   const float* mean, const float* rstd, int N, int C) {
  float* wbuf = cpu::thread_scratch(0, size_t(C));
  const float* wf = cpu::view_f32(weight, wbuf, size_t(C));
  const bool parallel = size_t(N) * C > cpu::kParallelMin;
  const int threads = parallel ? omp_get_max_threads() : 1;
  // Per-thread partial sums of dweight and dbias.
  std::vector<float> partial(size_t(threads) * 2 * C, 0.0f);
#pragma omp parallel num_threads(threads) if (parallel)
  {
    float* dw_acc = partial.data() + size_t(omp_get_thread_num()) * 2 * C;
    float* db_acc = dw_acc + C;
    float* xb = cpu::thread_scratch(2, size_t(C));
    float* gb = cpu::thread_scratch(3, size_t(C));
    float* norm = cpu::thread_scratch(4, size_t(C));
    float* di = cpu::thread_scratch(5, size_t(C));
#pragma omp for schedule(static)
    for (int i = 0; i < N; ++i) {
      const float* x = cpu::view_f32(inp + size_t(i) * C, xb, size_t(C));
      const float* g = cpu::view_f32(dout + size_t(i) * C, gb, size_t(C));
      const float m = mean[i], s = rstd[i];
      float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
      for (int c = 0; c < C; ++c) {
        norm[c] = (x[c] - m) * s;
        const float dn = g[c] * wf[c];
        dnorm_sum += dn;
        dnorm_norm_sum += dn * norm[c];
      }
      const float dnorm_mean = dnorm_sum / float(C), dnorm_norm_mean = dnorm_norm_sum / float(C);
      for (int c = 0; c < C; ++c) {
        db_acc[c] += g[c];
        dw_acc[c] += norm[c] * g[c];
      }
      if (dinp) {
        cpu::to_f32(di, dinp + size_t(i) * C, size_t(C));
        for (int c = 0; c < C; ++c)
          di[c] += (g[c] * wf[c] - dnorm_mean - norm[c] * dnorm_norm_mean) * s;
        cpu::from_f32(dinp + size_t(i) * C, di, size_t(C));
      }
    }
  }
  for (int t = 1; t < threads; ++t)
    for (int c = 0; c < 2 * C; ++c) partial[c] += partial[size_t(t) * 2 * C + c];
  float* cur = cpu::thread_scratch(1, size_t(C));
  if (dweight) {
    cpu::to_f32(cur, dweight, size_t(C));
    for (int c = 0; c < C; ++c) cur[c] += partial[c];
    cpu::from_f32(dweight, cur, size_t(C));
  }
  if (dbias) {
    cpu::to_f32(cur, dbias, size_t(C));
    for (int c = 0; c < C; ++c) cur[c] += partial[size_t(C) + c];
    cpu::from_f32(dbias, cur, size_t(C));
  }
}

}  // namespace

void CpuBackend::layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp,
                                   const void* weight, const void* bias, int N, int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    layernorm_fwd(static_cast<T*>(out), mean, rstd, static_cast<const T*>(inp),
                  static_cast<const T*>(weight), static_cast<const T*>(bias), N, C);
  });
}

void CpuBackend::layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias,
                                    const void* dout, const void* inp, const void* weight,
                                    const float* mean, const float* rstd, int N, int C) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    layernorm_bwd(static_cast<T*>(dinp), static_cast<T*>(dweight), static_cast<T*>(dbias),
                  static_cast<const T*>(dout), static_cast<const T*>(inp),
                  static_cast<const T*>(weight), static_cast<const float*>(mean),
                  static_cast<const float*>(rstd), N, C);
  });
}

}  // namespace hybrid::kernels
