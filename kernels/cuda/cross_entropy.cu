// Fused softmax + cross-entropy over the first V of Vp logits per row, for the
// whole vocabulary or one vocabulary shard (column j is id begin + j; the whole
// vocabulary is the shard from 0). A shard writes its statistics (logsumexp,
// target logit: 0 when another shard holds the target) instead of losses, and
// the combine kernel turns every shard's statistics into losses (one thread per
// row, shards in order).
//
// Forward: one block per row, one read of the row with an online max/sum-exp
// (each thread keeps a running max and a sum rescaled when the max grows), then
// one block-level merge; writes loss and logsumexp (fp32) per row. The
// probabilities are never stored.
// Backward: one block per row recomputes exp(logit - lse); each element is read
// and written by the same thread, so dlogits may alias logits (in place). The
// padded columns V..Vp-1 get 0. A negative target is no target: loss 0 and a
// zero gradient row. A target at or past V yields a NaN loss.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

// Merges the lanes' running (max m, sum of exp(x - m)) pairs over the warp;
// every lane ends with the warp's pair.
__device__ __forceinline__ void merge_max_sum_in_warp(float& m, float& sum) {
  for (int off = 16; off > 0; off >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, off);
    const float os = __shfl_xor_sync(0xffffffffu, sum, off);
    const float nm = fmaxf(m, om);
    sum = (m == -INFINITY ? 0.0f : sum * expf(m - nm)) +
          (om == -INFINITY ? 0.0f : os * expf(om - nm));
    m = nm;
  }
}

template <class T>
__global__ void cross_entropy_forward_kernel(float* losses, float* lse_out, float* target_logit,
                                             const T* logits, const int32_t* targets, int begin,
                                             int V, int Vp) {
  __shared__ float sh_max[32], sh_sum[32];
  const size_t row = blockIdx.x;
  const T* x = logits + row * size_t(Vp);
  float m = -INFINITY, sum = 0.0f;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float v = to_f32(x[j]);
    if (v > m) {
      sum = sum * expf(m - v) + 1.0f;
      m = v;
    } else {
      sum += expf(v - m);
    }
  }
  // Merge (m, sum) pairs: first within the warp, then across warps.
  merge_max_sum_in_warp(m, sum);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0) sh_max[warp] = m, sh_sum[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    m = lane < warps ? sh_max[lane] : -INFINITY;
    sum = lane < warps ? sh_sum[lane] : 0.0f;
    merge_max_sum_in_warp(m, sum);
    if (lane == 0) {
      const float lse = m + logf(sum);  // -inf when V == 0
      const bool ignored = targets[row] < 0;
      const int64_t t = int64_t(targets[row]) - begin;
      const bool valid = !ignored && t >= 0 && t < V;
      if (lse_out) lse_out[row] = lse;
      if (target_logit) target_logit[row] = valid ? to_f32(x[t]) : 0.0f;
      if (losses)
        losses[row] = ignored ? 0.0f : valid ? lse - to_f32(x[t]) : __int_as_float(0x7fc00000);
    }
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* logits, const float* lse,
                                              const int32_t* targets, float dloss, int begin, int V,
                                              int Vp) {
  const size_t row = blockIdx.x;
  const T* x = logits + row * size_t(Vp);
  T* dx = dlogits + row * size_t(Vp);
  const float l = lse[row];
  const int64_t t = int64_t(targets[row]) - begin;
  const bool ignored = targets[row] < 0;
  for (int j = threadIdx.x; j < Vp; j += blockDim.x) {
    float g = 0.0f;
    if (j < V && !ignored) g = dloss * (expf(to_f32(x[j]) - l) - (j == t ? 1.0f : 0.0f));
    dx[j] = from_f32<T>(g);
  }
}

__global__ void cross_entropy_combine_kernel(float* losses, float* lse, const float* gathered,
                                             const int32_t* targets, int shards, int N) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float m = -INFINITY;
  for (int s = 0; s < shards; ++s) m = fmaxf(m, gathered[size_t(s) * 2 * N + i]);
  double sum = 0.0, target = 0.0;
  for (int s = 0; s < shards; ++s) {
    const float* st = gathered + size_t(s) * 2 * N;
    if (st[i] != -INFINITY) sum += exp(double(st[i]) - double(m));
    target += st[N + i];
  }
  const float l = m + float(log(sum));
  if (lse) lse[i] = l;
  if (losses) losses[i] = targets[i] < 0 ? 0.0f : l - float(target);
}

}  // namespace

void cross_entropy_forward(DType dt, float* losses, float* lse, float* target_logit,
                           const void* logits, const int32_t* targets, int N, int begin, int V,
                           int Vp, cudaStream_t s) {
  if (N <= 0) return;
  const LaunchConfig c = block_per_row_config(size_t(N), size_t(V), 1024);
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    cross_entropy_forward_kernel<T><<<c.grid, c.block, 0, s>>>(
        losses, lse, target_logit, static_cast<const T*>(logits), targets, begin, V, Vp);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                  const int32_t* targets, int shards, int N, cudaStream_t s) {
  if (N <= 0) return;
  cross_entropy_combine_kernel<<<unsigned(ceil_div(size_t(N), 256)), 256, 0, s>>>(
      losses, lse, gathered, targets, shards, N);
  HYBRID_CUDA_CHECK_LAUNCH();
}

void cross_entropy_backward(DType dt, void* dlogits, const void* logits, const float* lse,
                            const int32_t* targets, float dloss, int N, int begin, int V, int Vp,
                            cudaStream_t s) {
  if (N <= 0) return;
  const LaunchConfig c = block_per_row_config(size_t(N), size_t(Vp), 1024);
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    cross_entropy_backward_kernel<T><<<c.grid, c.block, 0, s>>>(
        static_cast<T*>(dlogits), static_cast<const T*>(logits), lse, targets, dloss, begin, V, Vp);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
