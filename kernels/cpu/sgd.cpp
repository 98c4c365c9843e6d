// SGD with momentum on fp32 master weights (torch.optim.SGD semantics, which
// DeepSpeed uses for "SGD"): weight decay joins the gradient (L2), the momentum
// buffer starts as the first gradient (torch clones it) and then accumulates
// with dampening; nesterov looks one momentum step ahead. One pass reads the
// gradient, updates master and the buffer and writes the working copy.
#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

template <class G, class P>
void sgd_impl(const SgdParams& p, float* master, float* buf, const G* grad, float grad_scale,
              P* param_out, size_t n) {
  const float lr = p.lr, mu = p.momentum, wd = p.weight_decay, keep = 1.0f - p.dampening;
  const bool first = p.first_step, nesterov = p.nesterov;
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float gb[cpu::kChunk];
    const float* g = cpu::view_f32(grad + i0, gb, len);
    float* w = master + i0;
    if (buf) {
      float* b = buf + i0;
      for (size_t i = 0; i < len; ++i) {
        const float gi = g[i] * grad_scale + wd * w[i];
        const float bi = first ? gi : mu * b[i] + keep * gi;
        b[i] = bi;
        w[i] -= lr * (nesterov ? gi + mu * bi : bi);
      }
    } else {
      for (size_t i = 0; i < len; ++i) w[i] -= lr * (g[i] * grad_scale + wd * w[i]);
    }
    if (param_out) cpu::from_f32(param_out + i0, w, len);
  });
}

}  // namespace

void CpuBackend::sgd(const SgdParams& p, float* master, float* momentum_buf, DType grad_dt,
                     const void* grad, float grad_scale, DType param_dt, void* param_out,
                     size_t n) {
  float* buf = p.momentum != 0.0f ? momentum_buf : nullptr;
  if (p.momentum != 0.0f && !buf && n > 0)
    throw std::invalid_argument("sgd: momentum needs a momentum buffer");
  dispatch_dtype(grad_dt, [&](auto gtag) {
    dispatch_dtype(param_dt, [&](auto ptag) {
      using G = decltype(gtag);
      using P = decltype(ptag);
      sgd_impl(p, master, buf, static_cast<const G*>(grad), grad_scale, static_cast<P*>(param_out),
               n);
    });
  });
}

}  // namespace hybrid::kernels
