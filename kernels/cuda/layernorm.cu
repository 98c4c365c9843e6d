// LayerNorm (eps 1e-5, GPT-2's), statistics in fp32 whatever the storage dtype.
//
// Forward: one warp per row; two passes over the row in registers/L1 (mean, then
// variance of the centred values: no catastrophic cancellation), then the affine
// output. mean/rstd are saved for backward.
//
// Backward: fused into one pass over dout/inp. Each block owns a fixed strip of
// rows; for each row it computes the two row reductions, writes dinp (+=) and
// accumulates dweight/dbias for its columns in shared memory (each column owned
// by one thread: no atomics). A second kernel adds the per-block partials in
// block order, so the parameter gradients are deterministic.
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

constexpr float kEps = 1e-5f;
constexpr int kBackwardBlocks = 512;  // fixed, so results do not depend on the device

template <class T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp,
                                         const T* weight, const T* bias, int N, int C) {
  const int warps = blockDim.x / 32;
  const int row = blockIdx.x * warps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* x = inp + size_t(row) * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += 32) sum += to_f32(x[c]);
  const float m = warp_sum(sum) / float(C);
  float var = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = to_f32(x[c]) - m;
    var += d * d;
  }
  const float rs = rsqrtf(warp_sum(var) / float(C) + kEps);
  T* y = out + size_t(row) * C;
  for (int c = lane; c < C; c += 32) {
    const float n = (to_f32(x[c]) - m) * rs;
    const float b = bias ? to_f32(bias[c]) : 0.0f;
    y[c] = from_f32<T>(n * to_f32(weight[c]) + b);
  }
  if (lane == 0) {
    if (mean) mean[row] = m;
    if (rstd) rstd[row] = rs;
  }
}

template <class T>
__global__ void layernorm_backward_kernel(T* dinp, float* partial, const T* dout, const T* inp,
                                          const T* weight, const float* mean, const float* rstd,
                                          int N, int C, int rows_per_block) {
  extern __shared__ float shared[];
  float* dw_acc = shared;
  float* db_acc = shared + C;
  float* red = shared + 2 * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dw_acc[c] = 0.0f, db_acc[c] = 0.0f;
  const int row0 = blockIdx.x * rows_per_block;
  const int row1 = min(N, row0 + rows_per_block);
  for (int r = row0; r < row1; ++r) {
    const T* x = inp + size_t(r) * C;
    const T* dy = dout + size_t(r) * C;
    const float m = mean[r], rs = rstd[r];
    float s_dn = 0.0f, s_dn_xhat = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      const float xhat = (to_f32(x[c]) - m) * rs;
      const float dn = to_f32(dy[c]) * to_f32(weight[c]);
      s_dn += dn;
      s_dn_xhat += dn * xhat;
    }
    const float mean_dn = block_sum(s_dn, red) / float(C);
    const float mean_dn_xhat = block_sum(s_dn_xhat, red) / float(C);
    T* dx = dinp ? dinp + size_t(r) * C : nullptr;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      const float xhat = (to_f32(x[c]) - m) * rs;
      const float g = to_f32(dy[c]);
      if (dx) {
        const float dn = g * to_f32(weight[c]);
        dx[c] = from_f32<T>(to_f32(dx[c]) + rs * (dn - mean_dn - xhat * mean_dn_xhat));
      }
      dw_acc[c] += g * xhat;
      db_acc[c] += g;
    }
  }
  float* mine = partial + size_t(blockIdx.x) * 2 * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    mine[c] = dw_acc[c];
    mine[C + c] = db_acc[c];
  }
}

template <class T>
__global__ void layernorm_params_finalize_kernel(T* dweight, T* dbias, const float* partial,
                                                 int blocks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float dw = 0.0f, db = 0.0f;
  for (int b = 0; b < blocks; ++b) {
    dw += partial[size_t(b) * 2 * C + c];
    db += partial[size_t(b) * 2 * C + C + c];
  }
  if (dweight) dweight[c] = from_f32<T>(to_f32(dweight[c]) + dw);
  if (dbias) dbias[c] = from_f32<T>(to_f32(dbias[c]) + db);
}

}  // namespace

void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp,
                       const void* weight, const void* bias, int N, int C, cudaStream_t s) {
  const LaunchConfig c = warp_per_row_config(size_t(N), 8);
  if (!c.grid || C <= 0) return;
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    layernorm_forward_kernel<T><<<c.grid, c.block, 0, s>>>(
        static_cast<T*>(out), mean, rstd, static_cast<const T*>(inp), static_cast<const T*>(weight),
        static_cast<const T*>(bias), N, C);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                        const void* inp, const void* weight, const float* mean, const float* rstd,
                        int N, int C, CachingAllocator& alloc, cudaStream_t s) {
  if (N <= 0 || C <= 0) return;
  const int blocks = N < kBackwardBlocks ? N : kBackwardBlocks;
  const int rows_per_block = int(ceil_div(size_t(N), size_t(blocks)));
  const int used_blocks = int(ceil_div(size_t(N), size_t(rows_per_block)));
  const unsigned block = C >= 256 ? 256u : unsigned(ceil_div(size_t(C), 32) * 32);
  const size_t shared = (2 * size_t(C) + 32) * sizeof(float);
  Scratch partial(alloc, size_t(used_blocks) * 2 * size_t(C) * sizeof(float));
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    auto kernel = layernorm_backward_kernel<T>;
    if (shared > 48 * 1024)
      HYBRID_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    kernel<<<used_blocks, block, shared, s>>>(
        static_cast<T*>(dinp), partial.as<float>(), static_cast<const T*>(dout),
        static_cast<const T*>(inp), static_cast<const T*>(weight), mean, rstd, N, C,
        rows_per_block);
    HYBRID_CUDA_CHECK_LAUNCH();
    if (dweight || dbias) {
      layernorm_params_finalize_kernel<T><<<unsigned(ceil_div(size_t(C), 256)), 256, 0, s>>>(
          static_cast<T*>(dweight), static_cast<T*>(dbias), partial.as<float>(), used_blocks, C);
      HYBRID_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace hybrid::kernels::cuda
