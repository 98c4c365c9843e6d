// The Llama family's element-wise and row ops: RMSNorm (fp32 statistics),
// rotary position embedding (rotate-half, in place) and SwiGLU. The same
// semantics as the CPU backend (kernels/ops.h); the CPU is their oracle.
//
// RMSNorm backward follows layernorm.cu: fixed strips of rows per block, the
// weight gradient summed per block in shared memory and the partials added in
// block order (deterministic, no atomics).
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

constexpr int kBackwardBlocks = 512;

template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* weight, int N,
                                       int C, float eps) {
  const int warps = blockDim.x / 32;
  const int row = blockIdx.x * warps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* x = inp + size_t(row) * C;
  float ss = 0.0f;
  for (int c = lane; c < C; c += 32) ss += to_f32(x[c]) * to_f32(x[c]);
  const float rs = rsqrtf(warp_sum(ss) / float(C) + eps);
  T* y = out + size_t(row) * C;
  for (int c = lane; c < C; c += 32) y[c] = from_f32<T>(to_f32(x[c]) * rs * to_f32(weight[c]));
  if (lane == 0 && rstd) rstd[row] = rs;
}

template <class T>
__global__ void rmsnorm_backward_kernel(T* dinp, float* partial, const T* dout, const T* inp,
                                        const T* weight, const float* rstd, int N, int C,
                                        int rows_per_block) {
  extern __shared__ float shared[];
  float* dw_acc = shared;
  float* red = shared + C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dw_acc[c] = 0.0f;
  const int row0 = blockIdx.x * rows_per_block;
  const int row1 = min(N, row0 + rows_per_block);
  for (int r = row0; r < row1; ++r) {
    const T* x = inp + size_t(r) * C;
    const T* dy = dout + size_t(r) * C;
    const float rs = rstd[r];
    float dot = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
      dot += to_f32(dy[c]) * to_f32(weight[c]) * to_f32(x[c]) * rs;
    const float dot_mean = block_sum(dot, red) / float(C);
    T* dx = dinp ? dinp + size_t(r) * C : nullptr;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      const float xhat = to_f32(x[c]) * rs, g = to_f32(dy[c]);
      if (dx) dx[c] = from_f32<T>(to_f32(dx[c]) + rs * (g * to_f32(weight[c]) - xhat * dot_mean));
      dw_acc[c] += g * xhat;
    }
  }
  float* mine = partial + size_t(blockIdx.x) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) mine[c] = dw_acc[c];
}

template <class T>
__global__ void rmsnorm_weight_finalize_kernel(T* dweight, const float* partial, int blocks,
                                               int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float dw = 0.0f;
  for (int b = 0; b < blocks; ++b) dw += partial[size_t(b) * C + c];
  dweight[c] = from_f32<T>(to_f32(dweight[c]) + dw);
}

// One thread per (row, head, pair); sign +1 forward, −1 the transpose.
template <class T>
__global__ void rope_kernel(T* x, const int32_t* positions, int N, int T_len, int stride, int heads,
                            int d, float theta, float sign) {
  const int half = d / 2;
  const size_t total = size_t(N) * heads * half;
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < total;
       k += size_t(gridDim.x) * blockDim.x) {
    const int i = int(k % half);
    const size_t rh = k / half;
    const int h = int(rh % heads), r = int(rh / heads);
    const float inv = 1.0f / powf(theta, float(2 * i) / float(d));
    const float angle = float(positions ? positions[r] : r % T_len) * inv;
    float s, c;
    sincosf(angle, &s, &c);
    s *= sign;
    T* head = x + size_t(r) * stride + size_t(h) * d;
    const float x1 = to_f32(head[i]), x2 = to_f32(head[half + i]);
    head[i] = from_f32<T>(x1 * c - x2 * s);
    head[half + i] = from_f32<T>(x2 * c + x1 * s);
  }
}

template <class T>
__global__ void swiglu_forward_kernel(T* out, const T* gate_up, int N, int I) {
  const size_t total = size_t(N) * I;
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < total;
       k += size_t(gridDim.x) * blockDim.x) {
    const size_t row = k / I, c = k % I;
    const float g = to_f32(gate_up[row * 2 * I + c]), up = to_f32(gate_up[row * 2 * I + I + c]);
    out[k] = from_f32<T>(g / (1.0f + expf(-g)) * up);
  }
}

template <class T>
__global__ void swiglu_backward_kernel(T* dgate_up, const T* dout, const T* gate_up, int N, int I) {
  const size_t total = size_t(N) * I;
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < total;
       k += size_t(gridDim.x) * blockDim.x) {
    const size_t row = k / I, c = k % I, gi = row * 2 * I + c, ui = gi + I;
    const float g = to_f32(gate_up[gi]), up = to_f32(gate_up[ui]), dy = to_f32(dout[k]);
    const float sg = 1.0f / (1.0f + expf(-g));
    dgate_up[gi] = from_f32<T>(to_f32(dgate_up[gi]) + dy * up * sg * (1.0f + g * (1.0f - sg)));
    dgate_up[ui] = from_f32<T>(to_f32(dgate_up[ui]) + dy * g * sg);
  }
}

}  // namespace

void rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp, const void* weight, int N,
                     int C, float eps, cudaStream_t s) {
  const LaunchConfig c = warp_per_row_config(size_t(N), 8);
  if (!c.grid || C <= 0) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    rmsnorm_forward_kernel<T><<<c.grid, c.block, 0, s>>>(static_cast<T*>(out), rstd,
                                                         static_cast<const T*>(inp),
                                                         static_cast<const T*>(weight), N, C, eps);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void rmsnorm_backward(DType dt, void* dinp, void* dweight, const void* dout, const void* inp,
                      const void* weight, const float* rstd, int N, int C, CachingAllocator& alloc,
                      cudaStream_t s) {
  if (N <= 0 || C <= 0) return;
  const int blocks = N < kBackwardBlocks ? N : kBackwardBlocks;
  const int rows_per_block = int(ceil_div(size_t(N), size_t(blocks)));
  const int used_blocks = int(ceil_div(size_t(N), size_t(rows_per_block)));
  const unsigned block = C >= 256 ? 256u : unsigned(ceil_div(size_t(C), 32) * 32);
  const size_t shared = (size_t(C) + 32) * sizeof(float);
  Scratch partial(alloc, size_t(used_blocks) * size_t(C) * sizeof(float));
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    auto kernel = rmsnorm_backward_kernel<T>;
    if (shared > 48 * 1024)
      HYBRID_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    kernel<<<used_blocks, block, shared, s>>>(
        static_cast<T*>(dinp), partial.as<float>(), static_cast<const T*>(dout),
        static_cast<const T*>(inp), static_cast<const T*>(weight), rstd, N, C, rows_per_block);
    HYBRID_CUDA_CHECK_LAUNCH();
    if (dweight) {
      rmsnorm_weight_finalize_kernel<T><<<unsigned(ceil_div(size_t(C), 256)), 256, 0, s>>>(
          static_cast<T*>(dweight), partial.as<float>(), used_blocks, C);
      HYBRID_CUDA_CHECK_LAUNCH();
    }
  });
}

void rope(DType dt, void* x, const int32_t* positions, int N, int T, int stride, int heads,
          int head_dim, float theta, bool inverse, cudaStream_t s) {
  const LaunchConfig c = launch_config(size_t(N) * heads * (head_dim / 2), 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
    rope_kernel<E><<<c.grid, c.block, 0, s>>>(static_cast<E*>(x), positions, N, T, stride, heads,
                                              head_dim, theta, inverse ? -1.0f : 1.0f);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void swiglu_forward(DType dt, void* out, const void* gate_up, int N, int I, cudaStream_t s) {
  const LaunchConfig c = launch_config(size_t(N) * I, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    swiglu_forward_kernel<T>
        <<<c.grid, c.block, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(gate_up), N, I);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void swiglu_backward(DType dt, void* dgate_up, const void* dout, const void* gate_up, int N, int I,
                     cudaStream_t s) {
  const LaunchConfig c = launch_config(size_t(N) * I, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    swiglu_backward_kernel<T><<<c.grid, c.block, 0, s>>>(static_cast<T*>(dgate_up),
                                                         static_cast<const T*>(dout),
                                                         static_cast<const T*>(gate_up), N, I);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
