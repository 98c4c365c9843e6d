#include "bench/cuda_op_timing.h"

#if HYBRID_HAVE_CUDA
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace hybrid::bench {

Env* g_env = nullptr;

std::unique_ptr<Env> Env::open(std::string& why) {
  auto env = std::make_unique<Env>();
  try {
    env->owner = kernels::make_backend("cuda", 0).backend;
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
  env->b = dynamic_cast<kernels::CudaBackend*>(env->owner.get());
  cudaEventCreate(&env->e0);
  cudaEventCreate(&env->e1);
  if (cublasCreate(&env->cublas) != CUBLAS_STATUS_SUCCESS) {
    env->cublas = nullptr;
    why = "cublasCreate failed";
    return nullptr;
  }
  return env;
}

Env::~Env() {
  if (copy_src) b->deallocate(copy_src, copy_cap);
  if (copy_dst) b->deallocate(copy_dst, copy_cap);
  if (cublas) cublasDestroy(cublas);
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
}

DevBuf::DevBuf(size_t n_bytes, bool fill) : bytes(n_bytes) {
  p = g_env->b->allocate(bytes);
  if (!fill) {
    g_env->b->zero(p, bytes);
    return;
  }
  std::vector<uint16_t> chunk(size_t(1) << 20);
  uint32_t x = 2463534242u;
  for (auto& h : chunk) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    h = uint16_t(0x3c00u | (x & 0x83ffu));  // bf16/fp16-safe bit patterns of magnitude < 2
  }
  const size_t cb = chunk.size() * 2;
  g_env->b->copy_from_host(p, chunk.data(), std::min(cb, bytes));
  for (size_t off = cb; off < bytes; off += cb)
    g_env->b->copy(static_cast<char*>(p) + off, p, std::min(cb, bytes - off));
}

DevBuf::~DevBuf() { g_env->b->deallocate(p, bytes); }

float time_ms(const std::function<void()>& fn) {
  cudaStream_t s = g_env->b->compute_stream();
  cudaEventRecord(g_env->e0, s);
  fn();
  cudaEventRecord(g_env->e1, s);
  cudaEventSynchronize(g_env->e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, g_env->e0, g_env->e1);
  return ms;
}

std::function<void()> memcpy_ref(size_t traffic_bytes) {
  const size_t half = traffic_bytes / 2;  // a copy reads and writes: same traffic
  if (half > g_env->copy_cap) {
    if (g_env->copy_src) g_env->b->deallocate(g_env->copy_src, g_env->copy_cap);
    if (g_env->copy_dst) g_env->b->deallocate(g_env->copy_dst, g_env->copy_cap);
    g_env->copy_src = g_env->b->allocate(half);
    g_env->copy_dst = g_env->b->allocate(half);
    g_env->copy_cap = half;
  }
  return [half] {
    cudaMemcpyAsync(g_env->copy_dst, g_env->copy_src, half, cudaMemcpyDeviceToDevice,
                    g_env->b->compute_stream());
  };
}

void measure(benchmark::State& st, const std::function<void()>& op,
             const std::function<void()>& ref, double flops, double bytes) {
  op();
  ref();
  double op_ms = 0, ref_ms = 0;
  for (auto _ : st) {
    const float t = time_ms(op);
    st.SetIterationTime(t / 1e3);
    op_ms += t;
    ref_ms += time_ms(ref);
  }
  if (flops > 0)
    st.counters["FLOP/s"] =
        benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  if (bytes > 0)
    st.counters["bytes/s"] = benchmark::Counter(
        bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1024);
  st.counters["ref_ratio"] = op_ms > 0 ? ref_ms / op_ms : 0.0;
}

cudaDataType_t cuda_type(kernels::DType dt) {
  using kernels::DType;
  return dt == DType::f32 ? CUDA_R_32F : dt == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
}

std::function<void()> cublas_ref(kernels::DType dt, void* out, const void* inp, const void* w,
                                 int M, int K, int N) {
  return [=] {
    const float one = 1.0f, zero = 0.0f;
    cublasSetStream(g_env->cublas, g_env->b->compute_stream());
    cublasGemmEx(g_env->cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, cuda_type(dt), K, inp,
                 cuda_type(dt), K, &zero, out, cuda_type(dt), N, CUBLAS_COMPUTE_32F,
                 CUBLAS_GEMM_DEFAULT);
  };
}

}  // namespace hybrid::bench
#endif
