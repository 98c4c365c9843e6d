// Gradient statistics in one pass over the buffer: the sum of squares (for the
// global norm used by clipping) and a non-finite flag (for the fp16 loss scaler).
// Pass 1: a fixed grid of blocks, each thread accumulating fp32 squares over its
// grid-stride slice, a block reduction, then one fp64 partial per block. Pass 2:
// one block adds the partials in order in fp64. The grid size depends only on n,
// so the result is deterministic.
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

constexpr unsigned kBlocks = 1024;
constexpr unsigned kThreads = 256;

struct StatsResult {
  double sum_squares;
  int non_finite;
};

template <class T>
__global__ void grad_stats_partial_kernel(double* partial, int* flags, const T* x, size_t n) {
  __shared__ float red[32];
  float acc = 0.0f;
  int bad = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float v = to_f32(x[i]);
    bad |= !isfinite(v);
    acc += v * v;
  }
  const float total = block_sum(acc, red);
  const int any_bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = double(total);
    flags[blockIdx.x] = any_bad;
  }
}

__global__ void grad_stats_finalize_kernel(StatsResult* out, const double* partial,
                                           const int* flags, int blocks) {
  if (threadIdx.x != 0) return;
  double s = 0.0;
  int bad = 0;
  for (int b = 0; b < blocks; ++b) s += partial[b], bad |= flags[b];
  out->sum_squares = s;
  out->non_finite = bad;
}

}  // namespace

GradStats grad_stats(DType dt, const void* x, size_t n, CachingAllocator& alloc, cudaStream_t s) {
  GradStats result;
  const LaunchConfig c = launch_config(n, kThreads, kBlocks);
  if (!c.grid) return result;
  Scratch partial(alloc, c.grid * (sizeof(double) + sizeof(int)) + sizeof(StatsResult) + 16);
  auto* sums = partial.as<double>();
  auto* out = reinterpret_cast<StatsResult*>(sums + c.grid);
  auto* flags = reinterpret_cast<int*>(out + 1);
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    grad_stats_partial_kernel<T>
        <<<c.grid, c.block, 0, s>>>(sums, flags, static_cast<const T*>(x), n);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
  grad_stats_finalize_kernel<<<1, 32, 0, s>>>(out, sums, flags, int(c.grid));
  HYBRID_CUDA_CHECK_LAUNCH();
  StatsResult host{};
  HYBRID_CUDA_CHECK(cudaMemcpyAsync(&host, out, sizeof host, cudaMemcpyDeviceToHost, s));
  HYBRID_CUDA_CHECK(cudaStreamSynchronize(s));
  result.sum_squares = host.sum_squares;
  result.non_finite = host.non_finite != 0;
  return result;
}

}  // namespace hybrid::kernels::cuda
