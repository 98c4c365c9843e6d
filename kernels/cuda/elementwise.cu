// Elementwise kernels: residual add, dtype conversion, scaled add across dtypes,
// in-place scale, and the bias broadcast used when cuBLASLt has no bias epilogue.
// Memory-bound: one grid-stride loop each, fp32 arithmetic, one rounding on store.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

constexpr unsigned kMaxGrid = 8192;

template <class T>
__global__ void residual_kernel(T* out, const T* a, const T* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

template <class D, class S>
__global__ void convert_kernel(D* dst, const S* src, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32(src[i]));
}

template <class D, class S>
__global__ void add_kernel(D* dst, const S* src, size_t n, float alpha) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32(dst[i]) + alpha * to_f32(src[i]));
}

template <class T>
__global__ void scale_kernel(T* x, size_t n, float alpha) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] = from_f32<T>(alpha * to_f32(x[i]));
}

template <class T>
__global__ void add_bias_rows_kernel(T* out, const T* bias, size_t total, int N) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(to_f32(out[i]) + to_f32(bias[i % size_t(N)]));
}

}  // namespace

void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n, cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, kMaxGrid);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    residual_kernel<T><<<c.grid, c.block, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(a),
                                                  static_cast<const T*>(b), n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void convert(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n, cudaStream_t s) {
  if (n == 0) return;
  if (dst_dt == src_dt) {
    if (dst != src)
      HYBRID_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, n * dtype_size(dst_dt), cudaMemcpyDeviceToDevice, s));
    return;
  }
  const LaunchConfig c = launch_config(n, 256, kMaxGrid);
  dispatch_device_dtype(dst_dt, [&]<class D>(TypeTag<D>) {
    dispatch_device_dtype(src_dt, [&]<class S>(TypeTag<S>) {
      convert_kernel<D, S>
          <<<c.grid, c.block, 0, s>>>(static_cast<D*>(dst), static_cast<const S*>(src), n);
    });
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void add(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n, float alpha,
         cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, kMaxGrid);
  if (!c.grid) return;
  dispatch_device_dtype(dst_dt, [&]<class D>(TypeTag<D>) {
    dispatch_device_dtype(src_dt, [&]<class S>(TypeTag<S>) {
      add_kernel<D, S>
          <<<c.grid, c.block, 0, s>>>(static_cast<D*>(dst), static_cast<const S*>(src), n, alpha);
    });
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void scale(DType dt, void* x, size_t n, float alpha, cudaStream_t s) {
  const LaunchConfig c = launch_config(n, 256, kMaxGrid);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    scale_kernel<T><<<c.grid, c.block, 0, s>>>(static_cast<T*>(x), n, alpha);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void add_bias_rows(DType dt, void* out, const void* bias, int M, int N, cudaStream_t s) {
  const size_t total = size_t(M) * size_t(N);
  const LaunchConfig c = launch_config(total, 256, kMaxGrid);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    add_bias_rows_kernel<T>
        <<<c.grid, c.block, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(bias), total, N);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
