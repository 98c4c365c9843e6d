// SGD with momentum on the fp32 master weights (torch.optim.SGD semantics, as in
// kernels/cpu/sgd.cpp): weight decay joins the gradient, the momentum buffer
// starts as the first gradient, nesterov looks one momentum step ahead; one pass
// reads the gradient and writes master, buffer and the 16-bit working copy.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

struct SgdConsts {
  float lr, momentum, keep, weight_decay, grad_scale;
  bool first, nesterov;
};

template <class G, class P>
__global__ void sgd_kernel(SgdConsts k, float* master, float* buf, const G* grad, P* param_out,
                           size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float w = master[i];
    const float g = to_f32(grad[i]) * k.grad_scale + k.weight_decay * w;
    float step = g;
    if (buf) {
      const float b = k.first ? g : k.momentum * buf[i] + k.keep * g;
      buf[i] = b;
      step = k.nesterov ? g + k.momentum * b : b;
    }
    w -= k.lr * step;
    master[i] = w;
    if (param_out) param_out[i] = from_f32<P>(w);
  }
}

}  // namespace

void sgd(const SgdParams& p, float* master, float* momentum_buf, DType grad_dt, const void* grad,
         float grad_scale, DType param_dt, void* param_out, size_t n, cudaStream_t s) {
  float* buf = p.momentum != 0.0f ? momentum_buf : nullptr;
  if (p.momentum != 0.0f && !buf && n > 0)
    throw std::invalid_argument("sgd: momentum needs a momentum buffer");
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  const SgdConsts k{p.lr,       p.momentum,   1.0f - p.dampening, p.weight_decay,
                    grad_scale, p.first_step, p.nesterov};
  dispatch_device_dtype(grad_dt, [&]<class G>(TypeTag<G>) {
    dispatch_device_dtype(param_dt, [&]<class P>(TypeTag<P>) {
      sgd_kernel<G, P><<<c.grid, c.block, 0, s>>>(k, master, buf, static_cast<const G*>(grad),
                                                  static_cast<P*>(param_out), n);
    });
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
