// Fused AdamW on the fp32 master weights: reads the gradient in its storage dtype
// (scaled by grad_scale, i.e. the loss-scale unscale and clip factor folded in),
// updates master, m and v in place and writes the new weights to the 16-bit
// working copy in the same pass, so an optimizer step is one read and one write
// of each state tensor. Bias corrections are computed once on the host.
// decoupled_weight_decay=false is Adam with L2: the decay joins the gradient.
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

struct AdamWConsts {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float inv_bc1, inv_sqrt_bc2;
  bool decoupled;
};

template <class G, class P>
__global__ void adamw_kernel(AdamWConsts k, float* master, float* m, float* v, const G* grad,
                             P* param_out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float w = master[i];
    float g = to_f32(grad[i]) * k.grad_scale;
    if (!k.decoupled) g += k.weight_decay * w;
    const float mi = k.beta1 * m[i] + (1.0f - k.beta1) * g;
    const float vi = k.beta2 * v[i] + (1.0f - k.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * k.inv_sqrt_bc2 + k.eps;
    float update = (mi * k.inv_bc1) / denom;
    if (k.decoupled) update += k.weight_decay * w;
    w -= k.lr * update;
    master[i] = w;
    if (param_out) param_out[i] = from_f32<P>(w);
  }
}

}  // namespace

void adamw(const AdamWParams& p, float* master, float* m, float* v, DType grad_dt, const void* grad,
           float grad_scale, DType param_dt, void* param_out, size_t n, cudaStream_t s) {
  if (p.bias_correction && p.step < 1)
    throw std::invalid_argument("adamw: step must be >= 1 with bias correction, got " +
                                std::to_string(p.step));
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  AdamWConsts k{};
  k.lr = p.lr;
  k.beta1 = p.beta1;
  k.beta2 = p.beta2;
  k.eps = p.eps;
  k.weight_decay = p.weight_decay;
  k.grad_scale = grad_scale;
  k.decoupled = p.decoupled_weight_decay;
  if (p.bias_correction) {
    const double t = double(p.step);
    k.inv_bc1 = float(1.0 / (1.0 - std::pow(double(p.beta1), t)));
    k.inv_sqrt_bc2 = float(1.0 / std::sqrt(1.0 - std::pow(double(p.beta2), t)));
  } else {
    k.inv_bc1 = 1.0f;
    k.inv_sqrt_bc2 = 1.0f;
  }
  dispatch_device_dtype(grad_dt, [&]<class G>(TypeTag<G>) {
    dispatch_device_dtype(param_dt, [&]<class P>(TypeTag<P>) {
      adamw_kernel<G, P><<<c.grid, c.block, 0, s>>>(k, master, m, v, static_cast<const G*>(grad),
                                                    static_cast<P*>(param_out), n);
    });
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
