// Fused Adam/AdamW step on fp32 master weights (PyTorch / DeepSpeed semantics).
//
// One pass reads grad (any dtype, times grad_scale: the fp16 unscale is folded
// in), updates master, m and v in place, and writes the low-precision working
// copy param_out: the optimizer touches each byte once. Decoupled weight decay
// (AdamW) shrinks the weight before the Adam update, w −= lr·wd·w; without it
// (Adam + L2) wd·w is added to the gradient first.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

template <class G, class P>
void adamw_impl(const AdamWParams& p, float* master, float* m, float* v, const G* grad,
                float grad_scale, P* param_out, size_t n) {
  const float bc1 =
      p.bias_correction ? 1.0f - float(std::pow(double(p.beta1), double(p.step))) : 1.0f;
  const float bc2 =
      p.bias_correction ? 1.0f - float(std::pow(double(p.beta2), double(p.step))) : 1.0f;
  const float lr = p.lr, b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay;
  const float inv_bc1 = 1.0f / bc1, inv_bc2 = 1.0f / bc2;
  const float decay = p.decoupled_weight_decay ? 1.0f - lr * wd : 1.0f;
  const float l2 = p.decoupled_weight_decay ? 0.0f : wd;
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float gb[cpu::kChunk];
    const float* g = cpu::view_f32(grad + i0, gb, len);
    float* w = master + i0;
    float* mm = m + i0;
    float* vv = v + i0;
    for (size_t i = 0; i < len; ++i) {
      const float gi = g[i] * grad_scale + l2 * w[i];
      const float mi = b1 * mm[i] + (1.0f - b1) * gi;
      const float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;
      mm[i] = mi;
      vv[i] = vi;
      w[i] = w[i] * decay - lr * (mi * inv_bc1) / (std::sqrt(vi * inv_bc2) + eps);
    }
    if (param_out) cpu::from_f32(param_out + i0, w, len);
  });
}

}  // namespace

void CpuBackend::adamw(const AdamWParams& p, float* master, float* m, float* v, DType grad_dt,
                       const void* grad, float grad_scale, DType param_dt, void* param_out,
                       size_t n) {
  if (p.bias_correction && p.step < 1)
    throw std::invalid_argument("adamw: step must be >= 1 with bias correction, got " +
                                std::to_string(p.step));
  dispatch_dtype(grad_dt, [&](auto gtag) {
    dispatch_dtype(param_dt, [&](auto ptag) {
      using G = decltype(gtag);
      using P = decltype(ptag);
      adamw_impl(p, master, m, v, static_cast<const G*>(grad), grad_scale,
                 static_cast<P*>(param_out), n);
    });
  });
}

}  // namespace hybrid::kernels
