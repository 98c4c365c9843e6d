// The 1-bit compressed all-reduce's phases on device memory (kernels/ops.h),
// over the tiles of sign_tiles.h: one block per tile, one thread per 8 values
// (one byte of packed signs). A norm is the only cross-tile dependency: each
// phase writes one fp64 partial Σx² per tile, a per-tensor kernel adds a
// tensor's partials in tile order (deterministic) into its scale, and a last
// kernel packs the signs and leaves the residual. The arithmetic per value is
// the CPU backend's (kernels/cpu/sign_compression.cpp), term for term; only
// the norms' order of summation differs, within fp64 rounding.
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/cuda/sign_tiles.h"

namespace hybrid::kernels::cuda {

namespace {

// One phase's tables in device memory.
struct Tables {
  const SignTensor* tensors;
  const SignTile* tiles;
  const uint32_t* first_tile;
  double* partial;  // one per tile
  size_t count;
  int world;
  size_t block;
};

__device__ __forceinline__ double block_sum_double(double v, double* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// +1 for x >= 0 (±0 and NaN included), as kernels/sign_bits.h.
__device__ __forceinline__ float sign_of(float x) { return x < 0.0f ? -1.0f : 1.0f; }
__device__ __forceinline__ float sign_of_bit(unsigned byte, int k) {
  return (byte >> (7 - k)) & 1u ? 1.0f : -1.0f;
}
// The first value in the most significant bit.
__device__ __forceinline__ uint8_t pack8(const float* v) {
  unsigned byte = 0;
  for (int k = 0; k < 8; ++k) byte = (byte << 1) | (v[k] < 0.0f ? 0u : 1u);
  return uint8_t(byte);
}

// Worker phase, pass 1: the error takes the values (m = error + data).
__global__ void worker_accumulate_kernel(Tables t) {
  __shared__ double red[32];
  const SignTile tile = t.tiles[blockIdx.x];
  const SignTensor x = t.tensors[tile.tensor];
  double sq = 0.0;
  if (8 * threadIdx.x < tile.len) {
    const size_t i0 = tile.begin + 8 * threadIdx.x;
    for (int k = 0; k < 8; ++k) {
      float e = x.worker_error[i0 + k];
      if (i0 + k < x.n) e += x.data[i0 + k];  // the padding adds zeros
      x.worker_error[i0 + k] = e;
      sq += double(e) * double(e);
    }
  }
  const double total = block_sum_double(sq, red);
  if (threadIdx.x == 0) t.partial[blockIdx.x] = total;
}

// Server phase, pass 1: the error takes the average of the ranks' signs, each
// rank's weighted by its scale over W, summed in rank order.
__global__ void server_accumulate_kernel(Tables t, const uint8_t* received,
                                         const float* all_scales) {
  __shared__ double red[32];
  const SignTile tile = t.tiles[blockIdx.x];
  const SignTensor x = t.tensors[tile.tensor];
  double sq = 0.0;
  if (8 * threadIdx.x < tile.len) {
    const size_t i0 = tile.begin + 8 * threadIdx.x;
    const float inv_world = 1.0f / float(t.world);
    float sum[8] = {};
    for (int r = 0; r < t.world; ++r) {
      const float weight = all_scales[size_t(r) * t.count + tile.tensor] * inv_world;
      const unsigned byte = received[size_t(r) * t.block + x.offset + i0 / 8];
      for (int k = 0; k < 8; ++k) sum[k] += weight * sign_of_bit(byte, k);
    }
    for (int k = 0; k < 8; ++k) {
      const float e = sum[k] + x.server_error[i0 + k];
      x.server_error[i0 + k] = e;
      sq += double(e) * double(e);
    }
  }
  const double total = block_sum_double(sq, red);
  if (threadIdx.x == 0) t.partial[blockIdx.x] = total;
}

// Pass 2: one thread per tensor adds its tiles' partials, in order.
__global__ void tensor_scales_kernel(Tables t, float* scales, bool server) {
  const size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (k >= t.count) return;
  double sq = 0.0;
  for (uint32_t i = t.first_tile[k]; i < t.first_tile[k + 1]; ++i) sq += t.partial[i];
  const size_t n = server ? t.tensors[k].padded / size_t(t.world) : t.tensors[k].padded;
  scales[k] = float(sqrt(sq) / sqrt(double(n)));
}

// Pass 3: the signs packed (the worker's chunk j into rank j's block, the
// server's into its one block), the residual left behind.
template <bool Server>
__global__ void pack_kernel(Tables t, const float* scales, uint8_t* out) {
  const SignTile tile = t.tiles[blockIdx.x];
  if (8 * threadIdx.x >= tile.len) return;
  const SignTensor x = t.tensors[tile.tensor];
  const size_t i0 = tile.begin + 8 * threadIdx.x;
  float* e = (Server ? x.server_error : x.worker_error) + i0;
  float v[8];
  for (int k = 0; k < 8; ++k) v[k] = e[k];
  if constexpr (Server) {
    out[x.offset + i0 / 8] = pack8(v);
  } else {  // chunk j of the tensor goes to rank j's block
    const size_t chunk = x.padded / size_t(t.world), j = i0 / chunk;
    out[j * t.block + x.offset + (i0 - j * chunk) / 8] = pack8(v);
  }
  const float scale = scales[tile.tensor];
  for (int k = 0; k < 8; ++k) e[k] = v[k] - scale * sign_of(v[k]);
}

__global__ void decompress_kernel(Tables t, const uint8_t* received, const float* all_scales) {
  const SignTile tile = t.tiles[blockIdx.x];
  if (8 * threadIdx.x >= tile.len) return;
  const SignTensor x = t.tensors[tile.tensor];
  const size_t i0 = tile.begin + 8 * threadIdx.x;
  const size_t chunk = x.padded / size_t(t.world), j = i0 / chunk;
  const float scale = all_scales[j * t.count + tile.tensor];
  const unsigned byte = received[j * t.block + x.offset + (i0 - j * chunk) / 8];
  for (int k = 0; k < 8 && i0 + k < x.n; ++k) x.data[i0 + k] = scale * sign_of_bit(byte, k);
}

enum class Extent { padded, chunk, n };

// A phase's tables in device memory, held until its kernels are queued.
struct Uploaded {
  std::unique_ptr<Scratch> scratch;
  Tables tables{};
  unsigned tiles = 0;  // 0: nothing to launch
};

// The group's descriptors and its tiles over each tensor's `extent`, uploaded.
Uploaded upload(const SignGroup& g, Extent extent, CachingAllocator& alloc, cudaStream_t s) {
  Uploaded u;
  if (g.count == 0) return u;
  std::vector<size_t> extents(g.count);
  for (size_t k = 0; k < g.count; ++k)
    extents[k] = extent == Extent::padded  ? g.tensors[k].padded
                 : extent == Extent::chunk ? g.chunk(k)
                                           : g.tensors[k].n;
  const SignTilePlan plan = sign_tile_plan(extents);
  const size_t tiles = plan.tiles.size();
  if (tiles == 0) return u;
  const size_t tensor_bytes = g.count * sizeof(SignTensor);
  const size_t tile_bytes = tiles * sizeof(SignTile);
  const size_t first_bytes = plan.first_tile.size() * sizeof(uint32_t);
  const auto align8 = [](size_t b) { return (b + 7) / 8 * 8; };
  u.scratch = std::make_unique<Scratch>(alloc, align8(tensor_bytes) + align8(tile_bytes) +
                                                   align8(first_bytes) + tiles * sizeof(double));
  auto* base = u.scratch->as<char>();
  auto* tensors = reinterpret_cast<SignTensor*>(base);
  auto* tile_table = reinterpret_cast<SignTile*>(base + align8(tensor_bytes));
  auto* first = reinterpret_cast<uint32_t*>(base + align8(tensor_bytes) + align8(tile_bytes));
  auto* partial = reinterpret_cast<double*>(base + align8(tensor_bytes) + align8(tile_bytes) +
                                            align8(first_bytes));
  HYBRID_CUDA_CHECK(cudaMemcpyAsync(tensors, g.tensors, tensor_bytes, cudaMemcpyHostToDevice, s));
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(tile_table, plan.tiles.data(), tile_bytes, cudaMemcpyHostToDevice, s));
  HYBRID_CUDA_CHECK(
      cudaMemcpyAsync(first, plan.first_tile.data(), first_bytes, cudaMemcpyHostToDevice, s));
  u.tables = {tensors, tile_table, first, partial, g.count, g.world, g.block};
  u.tiles = unsigned(tiles);
  return u;
}

unsigned tensor_blocks(size_t count) { return unsigned((count + 127) / 128); }

// A compression phase: `accumulate` launches pass 1 over the uploaded tiles
// (the worker's over P values, the server's over its chunk), then the scales
// and the packing into `out`.
template <bool Server, class Accumulate>
void compress(const SignGroup& g, float* scales, uint8_t* out, CachingAllocator& alloc,
              cudaStream_t s, Accumulate&& accumulate) {
  const Uploaded u = upload(g, Server ? Extent::chunk : Extent::padded, alloc, s);
  if (!u.tiles) return;
  accumulate(u);
  HYBRID_CUDA_CHECK_LAUNCH();
  tensor_scales_kernel<<<tensor_blocks(g.count), 128, 0, s>>>(u.tables, scales, Server);
  HYBRID_CUDA_CHECK_LAUNCH();
  pack_kernel<Server><<<u.tiles, kSignThreads, 0, s>>>(u.tables, scales, out);
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace

void sign_compress_worker(const SignGroup& g, uint8_t* send, float* scales, CachingAllocator& alloc,
                          cudaStream_t s) {
  compress<false>(g, scales, send, alloc, s, [&](const Uploaded& u) {
    worker_accumulate_kernel<<<u.tiles, kSignThreads, 0, s>>>(u.tables);
  });
}

void sign_compress_server(const SignGroup& g, const uint8_t* received, const float* all_scales,
                          uint8_t* signs, float* scales, CachingAllocator& alloc, cudaStream_t s) {
  compress<true>(g, scales, signs, alloc, s, [&](const Uploaded& u) {
    server_accumulate_kernel<<<u.tiles, kSignThreads, 0, s>>>(u.tables, received, all_scales);
  });
}

void sign_decompress(const SignGroup& g, const uint8_t* received, const float* all_scales,
                     CachingAllocator& alloc, cudaStream_t s) {
  const Uploaded u = upload(g, Extent::n, alloc, s);
  if (!u.tiles) return;
  decompress_kernel<<<u.tiles, kSignThreads, 0, s>>>(u.tables, received, all_scales);
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace hybrid::kernels::cuda
