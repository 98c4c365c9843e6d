// DeepSpeed's fused Lamb in the two passes of kernels/ops.h. Segments (parameter
// tensors) are the grid's y dimension and several blocks share a segment
// (segment_plan), so the embedding does not serialise on one block.
//
// Pass 1 updates m and v and writes one (Σw², Σu²) partial per block in fp64;
// a second kernel adds each segment's partials in block order (deterministic),
// and the totals go to the host, which the engine needs anyway to agree on the
// norms across ranks. Pass 2 recomputes the update from m, v and w (as
// DeepSpeed's part 3 does) and applies it with the segment's trust ratio; it
// reads no gradient.
#include <vector>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

struct LambConsts {
  float beta1, beta2, eps, weight_decay, grad_scale, step_size;
  bool eps_inside_sqrt;
};

__device__ __forceinline__ float lamb_update_of(float m, float v, float w, const LambConsts& k) {
  const float denom = k.eps_inside_sqrt ? sqrtf(v + k.eps) : sqrtf(v) + k.eps;
  return m / denom + k.weight_decay * w;
}

template <class G>
__global__ void lamb_moments_kernel(LambConsts k, const float* master, float* m, float* v,
                                    const G* grad, const int64_t* bounds, double* partial) {
  __shared__ float red[32];
  const unsigned seg = blockIdx.y;
  const size_t base = size_t(bounds[seg]), len = size_t(bounds[seg + 1]) - base;
  const auto [b, e] = segment_block_range(len, gridDim.x, blockIdx.x);
  float w2 = 0.0f, u2 = 0.0f;
  for (size_t i = base + b + threadIdx.x; i < base + e; i += blockDim.x) {
    const float g = to_f32(grad[i]) * k.grad_scale;
    const float mi = k.beta1 * m[i] + (1.0f - k.beta1) * g;
    const float vi = k.beta2 * v[i] + (1.0f - k.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float w = master[i];
    const float u = lamb_update_of(mi, vi, w, k);
    w2 += w * w;
    u2 += u * u;
  }
  const float bw = block_sum(w2, red);
  const float bu = block_sum(u2, red);
  if (threadIdx.x == 0) {
    const size_t slot = (size_t(seg) * gridDim.x + blockIdx.x) * 2;
    partial[slot] = double(bw);
    partial[slot + 1] = double(bu);
  }
}

// One thread per segment: its partials in block order.
__global__ void lamb_segment_totals_kernel(const double* partial, double* totals, int segments,
                                           unsigned splits) {
  const int s = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (s >= segments) return;
  double w2 = 0.0, u2 = 0.0;
  for (unsigned x = 0; x < splits; ++x) {
    w2 += partial[(size_t(s) * splits + x) * 2];
    u2 += partial[(size_t(s) * splits + x) * 2 + 1];
  }
  totals[2 * s] = w2;
  totals[2 * s + 1] = u2;
}

template <class P>
__global__ void lamb_update_kernel(LambConsts k, float* master, const float* m, const float* v,
                                   const int64_t* bounds, const float* coeffs, P* param_out) {
  const unsigned seg = blockIdx.y;
  const size_t base = size_t(bounds[seg]), len = size_t(bounds[seg + 1]) - base;
  const auto [b, e] = segment_block_range(len, gridDim.x, blockIdx.x);
  const float scale = k.step_size * coeffs[seg];
  for (size_t i = base + b + threadIdx.x; i < base + e; i += blockDim.x) {
    float w = master[i];
    w -= scale * lamb_update_of(m[i], v[i], w, k);
    master[i] = w;
    if (param_out) param_out[i] = from_f32<P>(w);
  }
}

LambConsts consts_of(const LambParams& p, float grad_scale) {
  if (p.bias_correction && p.step < 1)
    throw std::invalid_argument("lamb: step must be >= 1 with bias correction, got " +
                                std::to_string(p.step));
  return {p.beta1,           p.beta2,          p.eps, p.weight_decay, grad_scale,
          lamb_step_size(p), p.eps_inside_sqrt};
}

}  // namespace

void lamb_moments(const LambParams& p, const float* master, float* m, float* v, DType grad_dt,
                  const void* grad, float grad_scale, const int64_t* bounds, int segments,
                  double* sums, CachingAllocator& alloc, cudaStream_t s) {
  const LambConsts k = consts_of(p, grad_scale);
  const SegmentPlan plan = segment_plan_of_bounds(bounds, segments, "lamb");
  if (!plan.splits) return;
  const size_t nseg = size_t(segments);
  const size_t partial_doubles = nseg * plan.splits * 2;
  Scratch scratch(alloc,
                  (nseg + 1) * sizeof(int64_t) + (partial_doubles + 2 * nseg) * sizeof(double));
  auto* dev_bounds = scratch.as<int64_t>();
  auto* partial = reinterpret_cast<double*>(dev_bounds + nseg + 1);
  double* totals = partial + partial_doubles;
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(dev_bounds, bounds, (nseg + 1) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  const dim3 grid(plan.splits, plan.segments);
  dispatch_device_dtype(grad_dt, [&]<class G>(TypeTag<G>) {
    lamb_moments_kernel<G><<<grid, plan.block, 0, s>>>(k, master, m, v, static_cast<const G*>(grad),
                                                       dev_bounds, partial);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
  const unsigned threads = 128;
  lamb_segment_totals_kernel<<<unsigned(ceil_div(nseg, threads)), threads, 0, s>>>(
      partial, totals, segments, plan.splits);
  HYBRID_CUDA_CHECK_LAUNCH();
  std::vector<double> host(2 * nseg);
  HYBRID_CUDA_CHECK(cudaMemcpyAsync(host.data(), totals, host.size() * sizeof(double),
                                    cudaMemcpyDeviceToHost, s));
  HYBRID_CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < host.size(); ++i) sums[i] += host[i];
}

void lamb_update(const LambParams& p, float* master, const float* m, const float* v,
                 const int64_t* bounds, int segments, const float* coeffs, DType param_dt,
                 void* param_out, CachingAllocator& alloc, cudaStream_t s) {
  const LambConsts k = consts_of(p, 1.0f);
  const SegmentPlan plan = segment_plan_of_bounds(bounds, segments, "lamb");
  if (!plan.splits) return;
  const size_t nseg = size_t(segments);
  Scratch scratch(alloc, (nseg + 1) * sizeof(int64_t) + nseg * sizeof(float));
  auto* dev_bounds = scratch.as<int64_t>();
  auto* dev_coeffs = reinterpret_cast<float*>(dev_bounds + nseg + 1);
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(dev_bounds, bounds, (nseg + 1) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(dev_coeffs, coeffs, nseg * sizeof(float), cudaMemcpyHostToDevice, s));
  const dim3 grid(plan.splits, plan.segments);
  dispatch_device_dtype(param_dt, [&]<class P>(TypeTag<P>) {
    lamb_update_kernel<P><<<grid, plan.block, 0, s>>>(k, master, m, v, dev_bounds, dev_coeffs,
                                                      static_cast<P*>(param_out));
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
