// 1-bit LAMB's compressed phase on host memory (kernels/ops.h). Threads take
// whole segments (parameter tensors), each summed in order in fp64, so the
// sums do not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

void CpuBackend::onebit_lamb_momentum(float beta1, const float* m, DType grad_dt, const void* grad,
                                      float grad_scale, const int64_t* bounds, int segments,
                                      const float* scales, float* out) {
  dispatch_dtype(grad_dt, [&](auto gtag) {
    using G = decltype(gtag);
    const G* g = static_cast<const G*>(grad);
#pragma omp parallel for schedule(dynamic)
    for (int s = 0; s < segments; ++s) {
      const float scale = scales[s];
      for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i)
        out[i] = (beta1 * m[i] + (1.0f - beta1) * (load(g[i]) * grad_scale)) * scale;
    }
  });
}

void CpuBackend::segment_sum_squares(const float* x, const int64_t* bounds, int segments,
                                     double* sums) {
#pragma omp parallel for schedule(dynamic)
  for (int s = 0; s < segments; ++s) {
    double sq = 0.0;
    for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i) sq += double(x[i]) * double(x[i]);
    sums[s] += sq;
  }
}

void CpuBackend::onebit_lamb_refresh(const MomentParams& p, const float* exchanged,
                                     const int64_t* bounds, int segments, const float* scales,
                                     float* m, const float* v, float* fresh, const float* master,
                                     double* stats) {
  const float b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay;
#pragma omp parallel for schedule(dynamic)
  for (int s = 0; s < segments; ++s) {
    const float scale = scales[s];
    float largest = 0.0f;
    double q2 = 0.0, u2 = 0.0;
    for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i) {
      const float next = exchanged[i] / scale;
      const float rebuilt = (next - m[i] * b1) / (1.0f - b1);
      m[i] = next;
      fresh[i] = b2 * fresh[i] + (1.0f - b2) * rebuilt * rebuilt;
      const float denom = std::sqrt(v[i]) + eps;
      const float q = next / denom;
      const float u = wd > 0.0f ? q + wd * master[i] : q;
      largest = std::max(largest, denom / (std::sqrt(fresh[i]) + eps));
      q2 += double(q) * double(q);
      u2 += double(u) * double(u);
    }
    stats[3 * s] = std::max(stats[3 * s], double(largest));
    stats[3 * s + 1] += q2;
    stats[3 * s + 2] += u2;
  }
}

}  // namespace hybrid::kernels
