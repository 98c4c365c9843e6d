// How bench_cuda_ops times an op on the device: CUDA events around each call on
// the compute stream (device time, not host launch time), the op and its
// reference alternately, and the references themselves (classic cuBLAS GEMMs, a
// device-to-device copy moving the same bytes). CUDA builds only.
#pragma once

#if HYBRID_HAVE_CUDA
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>

#include "kernels/cuda/cuda_backend.h"

namespace hybrid::bench {

// The CUDA backend, its events and cuBLAS, and the memcpy reference's buffers.
struct Env {
  std::unique_ptr<kernels::Backend> owner;
  kernels::CudaBackend* b = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  cublasHandle_t cublas = nullptr;
  void* copy_src = nullptr;
  void* copy_dst = nullptr;
  size_t copy_cap = 0;

  // The environment on device 0, or nullptr with `why` said when there is none.
  static std::unique_ptr<Env> open(std::string& why);
  Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env();
};
// The environment the benchmarks run in (set by main while they run).
extern Env* g_env;

// A device buffer with a repeating pseudo-random bf16/fp32 pattern in [-1, 1)
// (zeroed when !fill).
struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  DevBuf(size_t n_bytes, bool fill = true);
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf();
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// fn's device time on the compute stream, in ms.
float time_ms(const std::function<void()>& fn);

// A device-to-device copy with `traffic_bytes` of reads and writes.
std::function<void()> memcpy_ref(size_t traffic_bytes);

// Times op and ref alternately; reports op's time, rates and ref_time / op_time.
void measure(benchmark::State& st, const std::function<void()>& op,
             const std::function<void()>& ref, double flops, double bytes);

cudaDataType_t cuda_type(kernels::DType dt);

// Classic cuBLAS for out[M,N] = inp[M,K] · w[N,K]ᵀ (row-major), the GEMM reference.
std::function<void()> cublas_ref(kernels::DType dt, void* out, const void* inp, const void* w,
                                 int M, int K, int N);

}  // namespace hybrid::bench
#endif
