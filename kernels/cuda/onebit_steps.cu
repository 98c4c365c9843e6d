// The 1-bit optimizers' elementwise steps on device memory (kernels/ops.h),
// the CPU backend's expressions (kernels/cpu/onebit_steps.cpp) per element.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

template <class G>
__global__ void momentum_update_kernel(float beta1, float* m, const G* grad, float grad_scale,
                                       size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    m[i] = beta1 * m[i] + (1.0f - beta1) * (to_f32(grad[i]) * grad_scale);
}

template <class P>
__global__ void frozen_variance_step_kernel(float lr, float eps, float wd, float* master,
                                            const float* m, const float* v, float* accumulator,
                                            P* param_out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float w = master[i];
    const float u = lr * (m[i] / (sqrtf(v[i]) + eps) + wd * w);
    master[i] = w - u;
    if (accumulator) accumulator[i] -= u;
    if (param_out) param_out[i] = from_f32<P>(w - u);
  }
}

__global__ void zero_one_sync_begin_kernel(float* master, float* accumulator, const float* v,
                                           float eps, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float a = accumulator[i];
    master[i] -= a;
    accumulator[i] = a * (sqrtf(v[i]) + eps);
  }
}

template <class P>
__global__ void zero_one_sync_end_kernel(float* master, float* m, float* accumulator,
                                         const float* v, float eps, float lr_sum, P* param_out,
                                         size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float a = accumulator[i];
    m[i] = -(a / lr_sum);
    const float w = master[i] + a / (sqrtf(v[i]) + eps);
    master[i] = w;
    accumulator[i] = 0.0f;
    if (param_out) param_out[i] = from_f32<P>(w);
  }
}

}  // namespace

void momentum_update(float beta1, float* m, DType grad_dt, const void* grad, float grad_scale,
                     size_t n, cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(grad_dt, [&]<class G>(TypeTag<G>) {
    momentum_update_kernel<G>
        <<<c.grid, c.block, 0, s>>>(beta1, m, static_cast<const G*>(grad), grad_scale, n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void frozen_variance_step(const MomentParams& p, float* master, const float* m, const float* v,
                          float* accumulator, DType param_dt, void* param_out, size_t n,
                          cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(param_dt, [&]<class P>(TypeTag<P>) {
    frozen_variance_step_kernel<P><<<c.grid, c.block, 0, s>>>(
        p.lr, p.eps, p.weight_decay, master, m, v, accumulator, static_cast<P*>(param_out), n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps, size_t n,
                         cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  zero_one_sync_begin_kernel<<<c.grid, c.block, 0, s>>>(master, accumulator, v, eps, n);
  HYBRID_CUDA_CHECK_LAUNCH();
}

void zero_one_sync_end(float* master, float* m, float* accumulator, const float* v, float eps,
                       float lr_sum, DType param_dt, void* param_out, size_t n, cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(param_dt, [&]<class P>(TypeTag<P>) {
    zero_one_sync_end_kernel<P><<<c.grid, c.block, 0, s>>>(master, m, accumulator, v, eps, lr_sum,
                                                           static_cast<P*>(param_out), n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
