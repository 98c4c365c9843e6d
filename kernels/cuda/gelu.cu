// GELU with the tanh approximation (GPT-2's). The backward recomputes tanh from
// the saved input rather than saving it, and accumulates (+=) into dinp as every
// backward op does.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

template <class T>
__global__ void gelu_forward_kernel(T* out, const T* inp, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float x = to_f32(inp[i]);
    const float cube = 0.044715f * x * x * x;
    out[i] = from_f32<T>(0.5f * x * (1.0f + tanhf(kGeluScale * (x + cube))));
  }
}

template <class T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float x = to_f32(inp[i]);
    const float cube = 0.044715f * x * x * x;
    const float arg = kGeluScale * (x + cube);
    const float th = tanhf(arg);
    const float sech2 = 1.0f - th * th;
    const float local =
        0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = from_f32<T>(to_f32(dinp[i]) + local * to_f32(dout[i]));
  }
}

}  // namespace

void gelu_forward(DType dt, void* out, const void* inp, size_t n, cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    gelu_forward_kernel<T>
        <<<c.grid, c.block, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(inp), n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n,
                   cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    gelu_backward_kernel<T><<<c.grid, c.block, 0, s>>>(
        static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
