// The 1-bit optimizers' elementwise steps on host memory (kernels/ops.h): the
// momentum taking the local gradient, Adam's update with the variance frozen,
// and 0/1 Adam's synchronisation of its local steps.
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

void CpuBackend::momentum_update(float beta1, float* m, DType grad_dt, const void* grad,
                                 float grad_scale, size_t n) {
  dispatch_dtype(grad_dt, [&](auto gtag) {
    using G = decltype(gtag);
    const G* grad_of = static_cast<const G*>(grad);
    cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
      float gb[cpu::kChunk];
      const float* g = cpu::view_f32(grad_of + i0, gb, len);
      float* mm = m + i0;
      for (size_t i = 0; i < len; ++i) mm[i] = beta1 * mm[i] + (1.0f - beta1) * (g[i] * grad_scale);
    });
  });
}

void CpuBackend::frozen_variance_step(const MomentParams& p, float* master, const float* m,
                                      const float* v, float* accumulator, DType param_dt,
                                      void* param_out, size_t n) {
  const float lr = p.lr, eps = p.eps, wd = p.weight_decay;
  dispatch_dtype(param_dt, [&](auto ptag) {
    using P = decltype(ptag);
    cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
      float* w = master + i0;
      const float *mm = m + i0, *vv = v + i0;
      float* acc = accumulator ? accumulator + i0 : nullptr;
      for (size_t i = 0; i < len; ++i) {
        const float u = lr * (mm[i] / (std::sqrt(vv[i]) + eps) + wd * w[i]);
        w[i] -= u;
        if (acc) acc[i] -= u;
      }
      if (param_out) cpu::from_f32(static_cast<P*>(param_out) + i0, w, len);
    });
  });
}

void CpuBackend::zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps,
                                     size_t n) {
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float *w = master + i0, *acc = accumulator + i0;
    const float* vv = v + i0;
    for (size_t i = 0; i < len; ++i) {
      w[i] -= acc[i];
      acc[i] *= std::sqrt(vv[i]) + eps;
    }
  });
}

void CpuBackend::zero_one_sync_end(float* master, float* m, float* accumulator, const float* v,
                                   float eps, float lr_sum, DType param_dt, void* param_out,
                                   size_t n) {
  dispatch_dtype(param_dt, [&](auto ptag) {
    using P = decltype(ptag);
    cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
      float *w = master + i0, *mm = m + i0, *acc = accumulator + i0;
      const float* vv = v + i0;
      for (size_t i = 0; i < len; ++i) {
        mm[i] = -(acc[i] / lr_sum);
        w[i] += acc[i] / (std::sqrt(vv[i]) + eps);
        acc[i] = 0.0f;
      }
      if (param_out) cpu::from_f32(static_cast<P*>(param_out) + i0, w, len);
    });
  });
}

}  // namespace hybrid::kernels
