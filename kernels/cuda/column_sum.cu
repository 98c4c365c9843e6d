// Column sums that accumulate into a parameter gradient (dbias += Σ_rows dout).
// Deterministic by construction: pass 1 gives each block a fixed strip of rows
// and writes one fp32 partial row; pass 2 adds the partials in strip order and
// rounds once into dt. No atomics, so reruns give bit-identical gradients.
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

template <class T>
__global__ void column_partials_kernel(float* partial, const T* src, int M, int N,
                                       int rows_per_block) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= N) return;
  const int row0 = blockIdx.y * rows_per_block;
  const int row1 = min(M, row0 + rows_per_block);
  float acc = 0.0f;
  for (int r = row0; r < row1; ++r) acc += to_f32(src[size_t(r) * N + col]);
  partial[size_t(blockIdx.y) * N + col] = acc;
}

template <class T>
__global__ void column_finalize_kernel(T* dst, const float* partial, int row_blocks, int N) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= N) return;
  float acc = 0.0f;
  for (int b = 0; b < row_blocks; ++b) acc += partial[size_t(b) * N + col];
  dst[col] = from_f32<T>(to_f32(dst[col]) + acc);
}

}  // namespace

void column_sum_accumulate(DType dt, void* dst, const void* src, int M, int N,
                           CachingAllocator& alloc, cudaStream_t s) {
  const ColumnReducePlan p = column_reduce_plan(size_t(M), size_t(N), 256, 1024);
  if (p.row_blocks == 0) return;
  Scratch partial(alloc, p.scratch_floats * sizeof(float));
  dispatch_device_dtype(dt, [&]<class T>(TypeTag<T>) {
    column_partials_kernel<T><<<dim3(p.col_blocks, p.row_blocks), p.block, 0, s>>>(
        partial.as<float>(), static_cast<const T*>(src), M, N, int(p.rows_per_block));
    HYBRID_CUDA_CHECK_LAUNCH();
    column_finalize_kernel<T><<<p.col_blocks, p.block, 0, s>>>(
        static_cast<T*>(dst), partial.as<float>(), int(p.row_blocks), N);
    HYBRID_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace hybrid::kernels::cuda
