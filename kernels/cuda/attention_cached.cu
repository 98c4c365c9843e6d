// Attention over a key/value cache (generation), first version: the new
// tokens' key and value heads are copied into the cache, then one warp per
// query scores the cache's visible positions into shared memory (fp32), takes
// the causal softmax there and sums the values. Decode is memory-bound: each
// query reads its key/value head's cached rows once. The cache has its own
// dtype (C), the computation's is E: keys and values convert through fp32 on
// the way in and out.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

struct CacheShape {
  int B, T, NH, NKV, hs, max_tokens;
  __host__ __device__ size_t ld() const { return size_t(NH + 2 * NKV) * hs; }
  __host__ __device__ size_t head(int b, int g) const {
    return (size_t(b) * NKV + g) * size_t(max_tokens) * hs;
  }
};

// Element i of the new keys (and values) [B, T, NKV, hs] → its cache slot.
template <class T, class C>
__global__ void append_kernel(C* kc, C* vc, const T* qkv, const int* start, CacheShape s) {
  const size_t n = size_t(s.B) * s.T * s.NKV * s.hs;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int d = int(i % s.hs), g = int((i / s.hs) % s.NKV);
    const int t = int((i / (size_t(s.hs) * s.NKV)) % s.T),
              b = int(i / (size_t(s.hs) * s.NKV * s.T));
    const T* row = qkv + (size_t(b) * s.T + t) * s.ld();
    const size_t slot = s.head(b, g) + size_t(start[b] + t) * s.hs + d;
    kc[slot] = from_f32<C>(to_f32(row[size_t(s.NH + g) * s.hs + d]));
    vc[slot] = from_f32<C>(to_f32(row[size_t(s.NH + s.NKV + g) * s.hs + d]));
  }
}

// One warp per query (b, h, t); shared memory holds its start[b] + t + 1 scores.
template <class T, class C>
__global__ void cached_query_kernel(T* out, const T* qkv, const C* kc, const C* vc,
                                    const int* start, CacheShape s, float scale) {
  extern __shared__ float scores[];
  const int q = blockIdx.x, lane = threadIdx.x;
  const int t = q % s.T, h = (q / s.T) % s.NH, b = q / (s.T * s.NH);
  const int g = h / (s.NH / s.NKV), n = start[b] + t + 1;
  const T* qrow = qkv + (size_t(b) * s.T + t) * s.ld() + size_t(h) * s.hs;
  const C* k = kc + s.head(b, g);
  const C* v = vc + s.head(b, g);
  float mx = -INFINITY;
  for (int j = lane; j < n; j += 32) {
    float dot = 0.0f;
    for (int d = 0; d < s.hs; ++d) dot += to_f32(qrow[d]) * to_f32(k[size_t(j) * s.hs + d]);
    scores[j] = dot * scale;
    mx = fmaxf(mx, scores[j]);
  }
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int j = lane; j < n; j += 32) {
    scores[j] = __expf(scores[j] - mx);
    sum += scores[j];
  }
  sum = warp_sum(sum);
  __syncwarp();
  T* o = out + (size_t(b) * s.T + t) * size_t(s.NH) * s.hs + size_t(h) * s.hs;
  for (int d = lane; d < s.hs; d += 32) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += scores[j] * to_f32(v[size_t(j) * s.hs + d]);
    o[d] = from_f32<T>(acc / sum);
  }
}

}  // namespace

void attention_cached_forward(DType dt, void* out, const void* qkv, DType cache_dt, void* k_cache,
                              void* v_cache, const int* start, int B, int T, int C, int NH, int NKV,
                              int max_tokens, CachingAllocator& alloc, cudaStream_t st) {
  if (B <= 0 || T <= 0 || NH <= 0 || NKV <= 0 || C % NH != 0 || NH % NKV != 0)
    throw std::invalid_argument("attention_cached_forward: bad shape");
  const size_t shared = size_t(max_tokens) * sizeof(float);
  if (shared > 48 * 1024)
    throw std::invalid_argument("attention_cached_forward: a cache of " +
                                std::to_string(max_tokens) +
                                " positions needs more than 48 KiB of shared memory per query");
  for (int b = 0; b < B; ++b)
    if (start[b] < 0 || start[b] + T > max_tokens)
      throw std::invalid_argument("attention_cached_forward: row " + std::to_string(b) +
                                  " writes past its cache of " + std::to_string(max_tokens));
  const CacheShape s{B, T, NH, NKV, C / NH, max_tokens};
  Scratch starts(alloc, size_t(B) * sizeof(int));
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(starts.get(), start, size_t(B) * sizeof(int), cudaMemcpyHostToDevice, st));
  const LaunchConfig ew = launch_config(size_t(B) * T * NKV * s.hs, 256, 8192);
  dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
    dispatch_device_dtype(cache_dt, [&]<class K>(TypeTag<K>) {
      append_kernel<E, K>
          <<<ew.grid, ew.block, 0, st>>>(static_cast<K*>(k_cache), static_cast<K*>(v_cache),
                                         static_cast<const E*>(qkv), starts.as<int>(), s);
      HYBRID_CUDA_CHECK_LAUNCH();
      cached_query_kernel<E, K><<<B * NH * T, 32, shared, st>>>(
          static_cast<E*>(out), static_cast<const E*>(qkv), static_cast<const K*>(k_cache),
          static_cast<const K*>(v_cache), starts.as<int>(), s, 1.0f / std::sqrt(float(s.hs)));
      HYBRID_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace hybrid::kernels::cuda
