// Device-side storage types and the helpers every kernel shares: fp32 load/store
// for float, __half and __nv_bfloat16 (arithmetic is always fp32), the host
// dispatch from DType to the device type, and warp/block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <type_traits>

#include "kernels/dtype.h"

namespace hybrid::kernels::cuda {

template <class T>
struct TypeTag {
  using type = T;
};

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

// Round to nearest even.
template <class T>
__device__ __forceinline__ T from_f32(float x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(x);
  } else {
    static_assert(std::is_same_v<T, float>);
    return x;
  }
}

// Calls fn(TypeTag<T>{}) with T the device storage type of dt.
template <class Fn>
void dispatch_device_dtype(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::f32:
      fn(TypeTag<float>{});
      return;
    case DType::f16:
      fn(TypeTag<__half>{});
      return;
    case DType::bf16:
      fn(TypeTag<__nv_bfloat16>{});
      return;
  }
  throw std::invalid_argument("cuda backend: invalid dtype");
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Block-wide reductions; `shared` holds one float per warp. Every thread gets
// the result. The block size must be a multiple of 32.
__device__ __forceinline__ float block_sum(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0f;
  return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace hybrid::kernels::cuda
