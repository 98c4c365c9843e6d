// Token + position embedding, whole vocabulary or one vocabulary shard (wte holds
// `rows` rows from id `begin`; the whole vocabulary is the shard from 0 holding
// every id; tokens outside the shard contribute nothing). A token's position is
// positions[bt] when given (packed documents, generation), else t. Forward is a
// gather; a null wpe adds nothing. Backward is deterministic without atomics:
// the (token, row) pairs are radix-sorted by token (stable, so rows keep their
// order), then the block at the start of each run of equal tokens sums those
// dout rows in fp32 and adds once into dwte. dwpe sums over the batch per
// (t, c), or with positions is scattered as dwte is, sorted by position. Same
// inputs give bit-identical gradients.
#include <cub/device/device_radix_sort.cuh>
#include <limits>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

__device__ bool in_shard(int32_t token, int begin, int rows) {
  return token >= begin && int64_t(token) - begin < int64_t(rows);
}

template <class T>
__global__ void encoder_forward_kernel(T* out, const int32_t* tokens, const int32_t* positions,
                                       const T* wte, const T* wpe, int BT, int T_, int C, int begin,
                                       int rows) {
  const size_t total = size_t(BT) * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t bt = i / C, c = i % C;
    const size_t t = positions ? size_t(positions[bt]) : bt % T_;
    const int32_t tok = tokens[bt];
    float v = in_shard(tok, begin, rows) ? to_f32(wte[size_t(tok - begin) * C + c]) : 0.0f;
    if (wpe) v += to_f32(wpe[t * C + c]);
    out[i] = from_f32<T>(v);
  }
}

__global__ void iota_kernel(int32_t* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = i;
}

// Block i handles sorted entry i if it starts a run of equal keys (tokens into
// dwte, or positions into dwpe).
template <class T>
__global__ void scatter_sorted_rows_kernel(T* dwte, const T* dout, const int32_t* sorted_tokens,
                                           const int32_t* sorted_pos, int BT, int C, int begin,
                                           int rows) {
  const int i = blockIdx.x;
  const int32_t tok = sorted_tokens[i];
  if (i > 0 && sorted_tokens[i - 1] == tok) return;
  if (!in_shard(tok, begin, rows)) return;
  int end = i + 1;
  while (end < BT && sorted_tokens[end] == tok) ++end;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0.0f;
    for (int j = i; j < end; ++j) acc += to_f32(dout[size_t(sorted_pos[j]) * C + c]);
    T* dst = dwte + size_t(tok - begin) * C + c;
    *dst = from_f32<T>(to_f32(*dst) + acc);
  }
}

template <class T>
__global__ void encoder_wpe_backward_kernel(T* dwpe, const T* dout, int B, int T_, int C) {
  const size_t total = size_t(T_) * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (int b = 0; b < B; ++b) acc += to_f32(dout[size_t(b) * total + i]);
    dwpe[i] = from_f32<T>(to_f32(dwpe[i]) + acc);
  }
}

// table[keys[i] - begin] += dout[i] over the BT rows whose key is in [begin,
// begin + rows), deterministically (sorted by key, one block per run).
void scatter_rows(DType dt, void* table, const void* dout, const int32_t* keys, int BT, int C,
                  int begin, int rows, CachingAllocator& alloc, cudaStream_t s) {
  Scratch sorted_keys(alloc, size_t(BT) * sizeof(int32_t));
  Scratch pos(alloc, size_t(BT) * sizeof(int32_t));
  Scratch sorted_pos(alloc, size_t(BT) * sizeof(int32_t));
  iota_kernel<<<unsigned(ceil_div(size_t(BT), 256)), 256, 0, s>>>(pos.as<int32_t>(), BT);
  HYBRID_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  HYBRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys,
                                                    sorted_keys.as<int32_t>(), pos.as<int32_t>(),
                                                    sorted_pos.as<int32_t>(), BT, 0, 31, s));
  Scratch temp(alloc, temp_bytes);
  HYBRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys,
                                                    sorted_keys.as<int32_t>(), pos.as<int32_t>(),
                                                    sorted_pos.as<int32_t>(), BT, 0, 31, s));
  const unsigned block = C >= 256 ? 256u : unsigned(ceil_div(size_t(C), 32) * 32);
  dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
    scatter_sorted_rows_kernel<E><<<unsigned(BT), block, 0, s>>>(
        static_cast<E*>(table), static_cast<const E*>(dout), sorted_keys.as<int32_t>(),
        sorted_pos.as<int32_t>(), BT, C, begin, rows);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

}  // namespace

void encoder_forward(DType dt, void* out, const int32_t* tokens, const int32_t* positions,
                     const void* wte, const void* wpe, int B, int T, int C, int begin, int rows,
                     cudaStream_t s) {
  const LaunchConfig c = launch_config(size_t(B) * T * C, 256, 8192);
  if (!c.grid) return;
  dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
    encoder_forward_kernel<E><<<c.grid, c.block, 0, s>>>(
        static_cast<E*>(out), tokens, positions, static_cast<const E*>(wte),
        static_cast<const E*>(wpe), B * T, T, C, begin, rows);
  });
  HYBRID_CUDA_CHECK_LAUNCH();
}

void encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                      const int32_t* positions, int B, int T, int C, int begin, int rows,
                      CachingAllocator& alloc, cudaStream_t s) {
  const int BT = B * T;
  if (BT <= 0 || C <= 0) return;
  if (dwpe && positions)
    scatter_rows(dt, dwpe, dout, positions, BT, C, 0, std::numeric_limits<int>::max(), alloc, s);
  if (dwpe && !positions) {
    const LaunchConfig c = launch_config(size_t(T) * C, 256, 8192);
    dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
      encoder_wpe_backward_kernel<E>
          <<<c.grid, c.block, 0, s>>>(static_cast<E*>(dwpe), static_cast<const E*>(dout), B, T, C);
    });
    HYBRID_CUDA_CHECK_LAUNCH();
  }
  if (dwte) scatter_rows(dt, dwte, dout, tokens, BT, C, begin, rows, alloc, s);
}

}  // namespace hybrid::kernels::cuda
