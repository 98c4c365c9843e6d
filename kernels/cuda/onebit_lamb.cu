// 1-bit LAMB's compressed phase on device memory (kernels/ops.h), over
// segments as lamb.cu cuts them: several blocks per segment (segment_plan),
// each writing its partial statistics in fp64, a second kernel combining a
// segment's partials in block order (deterministic), the totals to the host.
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

// The host's bounds and per-segment floats, uploaded; `stats` partials per block.
struct Segments {
  SegmentPlan plan;
  const int64_t* bounds = nullptr;
  const float* scales = nullptr;
  double* partial = nullptr;  // plan.segments × plan.splits × stats
};

Segments upload(const int64_t* bounds, int segments, const float* scales, size_t stats,
                std::unique_ptr<Scratch>& scratch, CachingAllocator& alloc, cudaStream_t s) {
  Segments g;
  g.plan = segment_plan_of_bounds(bounds, segments, "onebit lamb");
  if (!g.plan.splits) return g;
  const size_t nseg = size_t(segments);
  const size_t partials = nseg * g.plan.splits * stats;
  scratch = std::make_unique<Scratch>(
      alloc, partials * sizeof(double) + (nseg + 1) * sizeof(int64_t) + nseg * sizeof(float));
  g.partial = scratch->as<double>();
  auto* dev_bounds = reinterpret_cast<int64_t*>(g.partial + partials);
  auto* dev_scales = reinterpret_cast<float*>(dev_bounds + nseg + 1);
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(dev_bounds, bounds, (nseg + 1) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  if (scales)
    HYBRID_CUDA_CHECK(
        cudaMemcpyAsync(dev_scales, scales, nseg * sizeof(float), cudaMemcpyHostToDevice, s));
  g.bounds = dev_bounds;
  g.scales = dev_scales;
  return g;
}

template <class G>
__global__ void onebit_lamb_momentum_kernel(float beta1, const float* m, const G* grad,
                                            float grad_scale, const int64_t* bounds,
                                            const float* scales, float* out) {
  const unsigned seg = blockIdx.y;
  const size_t base = size_t(bounds[seg]), len = size_t(bounds[seg + 1]) - base;
  const auto [b, e] = segment_block_range(len, gridDim.x, blockIdx.x);
  const float scale = scales[seg];
  for (size_t i = base + b + threadIdx.x; i < base + e; i += blockDim.x)
    out[i] = (beta1 * m[i] + (1.0f - beta1) * (to_f32(grad[i]) * grad_scale)) * scale;
}

__global__ void sum_squares_kernel(const float* x, const int64_t* bounds, double* partial) {
  __shared__ float red[32];
  const unsigned seg = blockIdx.y;
  const size_t base = size_t(bounds[seg]), len = size_t(bounds[seg + 1]) - base;
  const auto [b, e] = segment_block_range(len, gridDim.x, blockIdx.x);
  float sq = 0.0f;
  for (size_t i = base + b + threadIdx.x; i < base + e; i += blockDim.x) sq += x[i] * x[i];
  const float total = block_sum(sq, red);
  if (threadIdx.x == 0) partial[size_t(seg) * gridDim.x + blockIdx.x] = double(total);
}

struct RefreshConsts {
  float beta1, beta2, eps, weight_decay;
};

__global__ void refresh_kernel(RefreshConsts k, const float* exchanged, const int64_t* bounds,
                               const float* scales, float* m, const float* v, float* fresh,
                               const float* master, double* partial) {
  __shared__ float red[32];
  const unsigned seg = blockIdx.y;
  const size_t base = size_t(bounds[seg]), len = size_t(bounds[seg + 1]) - base;
  const auto [b, e] = segment_block_range(len, gridDim.x, blockIdx.x);
  const float scale = scales[seg];
  float largest = 0.0f, q2 = 0.0f, u2 = 0.0f;
  for (size_t i = base + b + threadIdx.x; i < base + e; i += blockDim.x) {
    const float next = exchanged[i] / scale;
    const float rebuilt = (next - m[i] * k.beta1) / (1.0f - k.beta1);
    m[i] = next;
    const float f = k.beta2 * fresh[i] + (1.0f - k.beta2) * rebuilt * rebuilt;
    fresh[i] = f;
    const float denom = sqrtf(v[i]) + k.eps;
    const float q = next / denom;
    const float u = k.weight_decay > 0.0f ? q + k.weight_decay * master[i] : q;
    largest = fmaxf(largest, denom / (sqrtf(f) + k.eps));
    q2 += q * q;
    u2 += u * u;
  }
  const float bl = block_max(largest, red);
  const float bq = block_sum(q2, red);
  const float bu = block_sum(u2, red);
  if (threadIdx.x == 0) {
    double* slot = partial + (size_t(seg) * gridDim.x + blockIdx.x) * 3;
    slot[0] = double(bl), slot[1] = double(bq), slot[2] = double(bu);
  }
}

// One thread per segment: its partials in block order (the first statistic a
// max when `first_is_max`), added into the totals.
__global__ void totals_kernel(const double* partial, double* totals, int segments, unsigned splits,
                              unsigned stats, bool first_is_max) {
  const int s = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (s >= segments) return;
  for (unsigned k = 0; k < stats; ++k) {
    double t = 0.0;
    for (unsigned x = 0; x < splits; ++x) {
      const double p = partial[(size_t(s) * splits + x) * stats + k];
      t = k == 0 && first_is_max ? fmax(t, p) : t + p;
    }
    totals[size_t(s) * stats + k] = t;
  }
}

// Combines the partials and adds (or, for a max, maxes) them into host `out`.
void finish(const Segments& g, int segments, unsigned stats, bool first_is_max, double* out,
            CachingAllocator& alloc, cudaStream_t s) {
  const size_t n = size_t(segments) * stats;
  Scratch totals(alloc, n * sizeof(double));
  totals_kernel<<<unsigned(ceil_div(size_t(segments), 128)), 128, 0, s>>>(
      g.partial, totals.as<double>(), segments, g.plan.splits, stats, first_is_max);
  HYBRID_CUDA_CHECK_LAUNCH();
  std::vector<double> host(n);
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), totals.get(), n * sizeof(double), cudaMemcpyDeviceToHost, s));
  HYBRID_CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i)
    out[i] = first_is_max && i % stats == 0 ? std::max(out[i], host[i]) : out[i] + host[i];
}

}  // namespace

void onebit_lamb_momentum(float beta1, const float* m, DType grad_dt, const void* grad,
                          float grad_scale, const int64_t* bounds, int segments,
                          const float* scales, float* out, CachingAllocator& alloc,
                          cudaStream_t s) {
  std::unique_ptr<Scratch> scratch;
  const Segments g = upload(bounds, segments, scales, 0, scratch, alloc, s);
  if (!g.plan.splits) return;
  const dim3 grid(g.plan.splits, g.plan.segments);
  dispatch_device_dtype(grad_dt, [&]<class G>(TypeTag<G>) {
    onebit_lamb_momentum_kernel<G><<<grid, g.plan.block, 0, s>>>(
        beta1, m, static_cast<const G*>(grad), grad_scale, g.bounds, g.scales, out);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void segment_sum_squares(const float* x, const int64_t* bounds, int segments, double* sums,
                         CachingAllocator& alloc, cudaStream_t s) {
  std::unique_ptr<Scratch> scratch;
  const Segments g = upload(bounds, segments, nullptr, 1, scratch, alloc, s);
  if (!g.plan.splits) return;
  sum_squares_kernel<<<dim3(g.plan.splits, g.plan.segments), g.plan.block, 0, s>>>(x, g.bounds,
                                                                                   g.partial);
  HYBRID_CUDA_CHECK_LAUNCH();
  finish(g, segments, 1, false, sums, alloc, s);
}

void onebit_lamb_refresh(const MomentParams& p, const float* exchanged, const int64_t* bounds,
                         int segments, const float* scales, float* m, const float* v, float* fresh,
                         const float* master, double* stats, CachingAllocator& alloc,
                         cudaStream_t s) {
  std::unique_ptr<Scratch> scratch;
  const Segments g = upload(bounds, segments, scales, 3, scratch, alloc, s);
  if (!g.plan.splits) return;
  const RefreshConsts k{p.beta1, p.beta2, p.eps, p.weight_decay};
  refresh_kernel<<<dim3(g.plan.splits, g.plan.segments), g.plan.block, 0, s>>>(
      k, exchanged, g.bounds, g.scales, m, v, fresh, master, g.partial);
  HYBRID_CUDA_CHECK_LAUNCH();
  finish(g, segments, 3, true, stats, alloc, s);
}

}  // namespace hybrid::kernels::cuda
