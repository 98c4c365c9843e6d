#include "kernels/cuda/cuda_backend.h"

#include <limits>
#include <stdexcept>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels {

namespace {
// The whole-vocabulary ops are the shard from id 0 that holds every id.
constexpr int kWholeVocabulary = std::numeric_limits<int>::max();
}  // namespace

using cuda::CudaError;

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return 0;
  }
  if (n <= 0 && why) *why = "cudaGetDeviceCount: no CUDA device";
  return n > 0 ? n : 0;
}

CudaBackend::CudaBackend(int device) : device_(device) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (device < 0 || device >= count)
    throw CudaError("cuda backend: device " + std::to_string(device) + " does not exist (" +
                    (count ? std::to_string(count) + " devices" : why) + ")");
  HYBRID_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  HYBRID_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  cc_major_ = prop.major;
  name_ = "cuda:" + std::to_string(device) + " " + prop.name;
  HYBRID_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  HYBRID_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
  const std::string label = "cuda:" + std::to_string(device);
  alloc_ = std::make_unique<cuda::CachingAllocator>(
      label,
      [](size_t bytes) -> void* {
        void* p = nullptr;
        const cudaError_t e = cudaMalloc(&p, bytes);
        if (e == cudaErrorMemoryAllocation) {
          cudaGetLastError();
          return nullptr;
        }
        if (e != cudaSuccess) cuda::throw_cuda_error(e, "cudaMalloc", __FILE__, __LINE__);
        return p;
      },
      [](void* p) { cudaFree(p); },
      [] {
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
          return std::string("device state unknown");
        return "device has " + cuda::format_byte_size(free_b) + " free of " +
               cuda::format_byte_size(total_b);
      });
  gemm_ = std::make_unique<cuda::LtGemm>(*alloc_);
}

CudaBackend::~CudaBackend() {
  // Nothing may throw here: errors at teardown are ignored.
  if (compute_) cudaStreamSynchronize(compute_);
  if (comm_) cudaStreamSynchronize(comm_);
  release_transfer_resources();
  gemm_.reset();
  alloc_.reset();
  if (compute_) cudaStreamDestroy(compute_);
  if (comm_) cudaStreamDestroy(comm_);
}

bool CudaBackend::supports(DType dt) const {
  return dt != DType::bf16 || cc_major_ >= 8;  // bf16 arithmetic types need sm_80
}

void CudaBackend::set_allow_tf32(bool on) { gemm_->set_allow_tf32(on); }

// ---- memory ---------------------------------------------------------------

void* CudaBackend::allocate(size_t bytes) { return alloc_->allocate(bytes); }
void CudaBackend::deallocate(void* ptr, size_t) { alloc_->deallocate(ptr); }

void CudaBackend::zero(void* ptr, size_t bytes) {
  if (bytes) HYBRID_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, compute_));
}
void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src)
    HYBRID_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_));
}
void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (!bytes) return;
  HYBRID_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, compute_));
  HYBRID_CUDA_CHECK(cudaStreamSynchronize(compute_));
}
void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  if (!bytes) return;
  HYBRID_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, compute_));
  HYBRID_CUDA_CHECK(cudaStreamSynchronize(compute_));  // host_src may be reused at once
}
void CudaBackend::synchronize() { HYBRID_CUDA_CHECK(cudaStreamSynchronize(compute_)); }

// ---- dense algebra ----------------------------------------------------------

void CudaBackend::gemm(DType dt, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                       const void* A, int lda, const void* B, int ldb, float beta, void* C,
                       int ldc) {
  cuda::GemmCall g;
  g.trans_a = trans_a, g.trans_b = trans_b;
  g.M = M, g.N = N, g.K = K;
  g.alpha = alpha, g.beta = beta;
  g.A = A, g.lda = lda, g.B = B, g.ldb = ldb, g.C = C, g.ldc = ldc;
  gemm_->run(dt, g, compute_);
}

void CudaBackend::matmul_forward(DType dt, void* out, const void* inp, const void* weight,
                                 const void* bias, int M, int K, int N) {
  cuda::GemmCall g;
  g.trans_b = true;  // out = inp · weightᵀ
  g.M = M, g.N = N, g.K = K;
  g.A = inp, g.lda = K, g.B = weight, g.ldb = K, g.C = out, g.ldc = N;
  if (bias) g.epilogue = cuda::Epilogue::bias, g.bias = bias;
  gemm_->run(dt, g, compute_);
}

void CudaBackend::matmul_forward_gelu(DType dt, void* out, void* pre_gelu, const void* inp,
                                      const void* weight, const void* bias, int M, int K, int N) {
  if (!bias || !pre_gelu)
    throw std::invalid_argument("matmul_forward_gelu: bias and pre_gelu are required");
  cuda::GemmCall g;
  g.trans_b = true;
  g.M = M, g.N = N, g.K = K;
  g.A = inp, g.lda = K, g.B = weight, g.ldb = K, g.C = out, g.ldc = N;
  g.epilogue = cuda::Epilogue::gelu_bias, g.bias = bias, g.aux = pre_gelu, g.ld_aux = N;
  gemm_->run(dt, g, compute_);
}

void CudaBackend::matmul_backward(DType dt, void* dinp, void* dweight, void* dbias,
                                  const void* dout, const void* inp, const void* weight, int M,
                                  int K, int N) {
  if (dinp) gemm(dt, false, false, M, K, N, 1.0f, dout, N, weight, K, 1.0f, dinp, K);
  if (dweight) gemm(dt, true, false, N, K, M, 1.0f, dout, N, inp, K, 1.0f, dweight, K);
  if (dbias) cuda::column_sum_accumulate(dt, dbias, dout, M, N, *alloc_, compute_);
}

// ---- transformer ops ---------------------------------------------------------

void CudaBackend::encoder_forward(DType dt, void* out, const int32_t* tokens,
                                  const int32_t* positions, const void* wte, const void* wpe, int B,
                                  int T, int C) {
  cuda::encoder_forward(dt, out, tokens, positions, wte, wpe, B, T, C, 0, kWholeVocabulary,
                        compute_);
}
void CudaBackend::encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                   const int32_t* tokens, const int32_t* positions, int B, int T,
                                   int C) {
  cuda::encoder_backward(dt, dwte, dwpe, dout, tokens, positions, B, T, C, 0, kWholeVocabulary,
                         *alloc_, compute_);
}
void CudaBackend::layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp,
                                    const void* weight, const void* bias, int N, int C) {
  cuda::layernorm_forward(dt, out, mean, rstd, inp, weight, bias, N, C, compute_);
}
void CudaBackend::layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias,
                                     const void* dout, const void* inp, const void* weight,
                                     const float* mean, const float* rstd, int N, int C) {
  cuda::layernorm_backward(dt, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, *alloc_,
                           compute_);
}
void CudaBackend::rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp,
                                  const void* weight, int N, int C, float eps) {
  cuda::rmsnorm_forward(dt, out, rstd, inp, weight, N, C, eps, compute_);
}
void CudaBackend::rmsnorm_backward(DType dt, void* dinp, void* dweight, const void* dout,
                                   const void* inp, const void* weight, const float* rstd, int N,
                                   int C) {
  cuda::rmsnorm_backward(dt, dinp, dweight, dout, inp, weight, rstd, N, C, *alloc_, compute_);
}
void CudaBackend::rope_forward(DType dt, void* x, const int32_t* positions, int N, int T,
                               int stride, int heads, int head_dim, float theta) {
  cuda::rope(dt, x, positions, N, T, stride, heads, head_dim, theta, false, compute_);
}
void CudaBackend::rope_backward(DType dt, void* dx, const int32_t* positions, int N, int T,
                                int stride, int heads, int head_dim, float theta) {
  cuda::rope(dt, dx, positions, N, T, stride, heads, head_dim, theta, true, compute_);
}
void CudaBackend::swiglu_forward(DType dt, void* out, const void* gate_up, int N, int I) {
  cuda::swiglu_forward(dt, out, gate_up, N, I, compute_);
}
void CudaBackend::swiglu_backward(DType dt, void* dgate_up, const void* dout, const void* gate_up,
                                  int N, int I) {
  cuda::swiglu_backward(dt, dgate_up, dout, gate_up, N, I, compute_);
}

void CudaBackend::gelu_forward(DType dt, void* out, const void* inp, size_t n) {
  cuda::gelu_forward(dt, out, inp, n, compute_);
}
void CudaBackend::gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n) {
  cuda::gelu_backward(dt, dinp, inp, dout, n, compute_);
}
size_t CudaBackend::attention_saved_bytes(DType dt, int B, int T, int C, int NH) const {
  return cuda::attention_saved_bytes(dt, B, T, C, NH);
}
void CudaBackend::attention_forward(DType dt, void* out, void* saved, const void* qkv,
                                    const int32_t* positions, int B, int T, int C, int NH,
                                    int NKV) {
  cuda::attention_forward(dt, out, saved, qkv, positions, B, T, C, NH, NKV, *gemm_, *alloc_,
                          compute_);
}
void CudaBackend::attention_backward(DType dt, void* dqkv, const void* dout, const void* qkv,
                                     const void*, const void* saved, const int32_t* positions,
                                     int B, int T, int C, int NH, int NKV) {
  cuda::attention_backward(dt, dqkv, dout, qkv, saved, positions, B, T, C, NH, NKV, *gemm_, *alloc_,
                           compute_);
}
void CudaBackend::attention_cached_forward(DType dt, void* out, const void* qkv, DType cache_dt,
                                           void* k_cache, void* v_cache, const int* start, int B,
                                           int T, int C, int NH, int NKV, int max_tokens) {
  cuda::attention_cached_forward(dt, out, qkv, cache_dt, k_cache, v_cache, start, B, T, C, NH, NKV,
                                 max_tokens, *alloc_, compute_);
}
void CudaBackend::residual_forward(DType dt, void* out, const void* a, const void* b, size_t n) {
  cuda::residual_forward(dt, out, a, b, n, compute_);
}
void CudaBackend::cross_entropy_forward(DType dt, float* losses, float* lse, const void* logits,
                                        const int32_t* targets, int N, int V, int Vp) {
  cuda::cross_entropy_forward(dt, losses, lse, nullptr, logits, targets, N, 0, V, Vp, compute_);
}
void CudaBackend::cross_entropy_backward(DType dt, void* dlogits, const void* logits,
                                         const float* lse, const int32_t* targets, float dloss,
                                         int N, int V, int Vp) {
  cuda::cross_entropy_backward(dt, dlogits, logits, lse, targets, dloss, N, 0, V, Vp, compute_);
}

// ---- tensor parallelism: vocabulary shards -----------------------------------

void CudaBackend::encoder_shard_forward(DType dt, void* out, const int32_t* tokens,
                                        const int32_t* positions, const void* wte, const void* wpe,
                                        int B, int T, int C, int begin, int rows) {
  cuda::encoder_forward(dt, out, tokens, positions, wte, wpe, B, T, C, begin, rows, compute_);
}
void CudaBackend::encoder_shard_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                         const int32_t* tokens, const int32_t* positions, int B,
                                         int T, int C, int begin, int rows) {
  cuda::encoder_backward(dt, dwte, dwpe, dout, tokens, positions, B, T, C, begin, rows, *alloc_,
                         compute_);
}
void CudaBackend::cross_entropy_shard_forward(DType dt, float* stats, const void* logits,
                                              const int32_t* targets, int N, int begin, int V,
                                              int Vs) {
  cuda::cross_entropy_forward(dt, nullptr, stats, stats + N, logits, targets, N, begin, V, Vs,
                              compute_);
}
void CudaBackend::cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                               const int32_t* targets, int shards, int N) {
  cuda::cross_entropy_combine_shards(losses, lse, gathered, targets, shards, N, compute_);
}
void CudaBackend::cross_entropy_shard_backward(DType dt, void* dlogits, const void* logits,
                                               const float* lse, const int32_t* targets,
                                               float dloss, int N, int begin, int V, int Vs) {
  cuda::cross_entropy_backward(dt, dlogits, logits, lse, targets, dloss, N, begin, V, Vs, compute_);
}

// ---- elementwise and reductions ---------------------------------------------

void CudaBackend::convert(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n) {
  cuda::convert(dst_dt, dst, src_dt, src, n, compute_);
}
void CudaBackend::add(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n,
                      float alpha) {
  cuda::add(dst_dt, dst, src_dt, src, n, alpha, compute_);
}
void CudaBackend::scale(DType dt, void* x, size_t n, float alpha) {
  cuda::scale(dt, x, n, alpha, compute_);
}
GradStats CudaBackend::grad_stats(DType dt, const void* x, size_t n) {
  return cuda::grad_stats(dt, x, n, *alloc_, compute_);
}
void CudaBackend::adamw(const AdamWParams& p, float* master, float* m, float* v, DType grad_dt,
                        const void* grad, float grad_scale, DType param_dt, void* param_out,
                        size_t n) {
  cuda::adamw(p, master, m, v, grad_dt, grad, grad_scale, param_dt, param_out, n, compute_);
}
void CudaBackend::sgd(const SgdParams& p, float* master, float* momentum_buf, DType grad_dt,
                      const void* grad, float grad_scale, DType param_dt, void* param_out,
                      size_t n) {
  cuda::sgd(p, master, momentum_buf, grad_dt, grad, grad_scale, param_dt, param_out, n, compute_);
}
void CudaBackend::lamb_moments(const LambParams& p, const float* master, float* m, float* v,
                               DType grad_dt, const void* grad, float grad_scale,
                               const int64_t* bounds, int segments, double* sums) {
  cuda::lamb_moments(p, master, m, v, grad_dt, grad, grad_scale, bounds, segments, sums, *alloc_,
                     compute_);
}
void CudaBackend::lamb_update(const LambParams& p, float* master, const float* m, const float* v,
                              const int64_t* bounds, int segments, const float* coeffs,
                              DType param_dt, void* param_out) {
  cuda::lamb_update(p, master, m, v, bounds, segments, coeffs, param_dt, param_out, *alloc_,
                    compute_);
}

void CudaBackend::sign_compress_worker(const SignGroup& g, uint8_t* send, float* scales) {
  cuda::sign_compress_worker(g, send, scales, *alloc_, compute_);
}
void CudaBackend::sign_compress_server(const SignGroup& g, const uint8_t* received,
                                       const float* all_scales, uint8_t* signs, float* scales) {
  cuda::sign_compress_server(g, received, all_scales, signs, scales, *alloc_, compute_);
}
void CudaBackend::sign_decompress(const SignGroup& g, const uint8_t* received,
                                  const float* all_scales) {
  cuda::sign_decompress(g, received, all_scales, *alloc_, compute_);
}
void CudaBackend::momentum_update(float beta1, float* m, DType grad_dt, const void* grad,
                                  float grad_scale, size_t n) {
  cuda::momentum_update(beta1, m, grad_dt, grad, grad_scale, n, compute_);
}
void CudaBackend::frozen_variance_step(const MomentParams& p, float* master, const float* m,
                                       const float* v, float* accumulator, DType param_dt,
                                       void* param_out, size_t n) {
  cuda::frozen_variance_step(p, master, m, v, accumulator, param_dt, param_out, n, compute_);
}

void CudaBackend::zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps,
                                      size_t n) {
  cuda::zero_one_sync_begin(master, accumulator, v, eps, n, compute_);
}
void CudaBackend::zero_one_sync_end(float* master, float* m, float* accumulator, const float* v,
                                    float eps, float lr_sum, DType param_dt, void* param_out,
                                    size_t n) {
  cuda::zero_one_sync_end(master, m, accumulator, v, eps, lr_sum, param_dt, param_out, n, compute_);
}

void CudaBackend::onebit_lamb_momentum(float beta1, const float* m, DType grad_dt, const void* grad,
                                       float grad_scale, const int64_t* bounds, int segments,
                                       const float* scales, float* out) {
  cuda::onebit_lamb_momentum(beta1, m, grad_dt, grad, grad_scale, bounds, segments, scales, out,
                             *alloc_, compute_);
}
void CudaBackend::segment_sum_squares(const float* x, const int64_t* bounds, int segments,
                                      double* sums) {
  cuda::segment_sum_squares(x, bounds, segments, sums, *alloc_, compute_);
}
void CudaBackend::onebit_lamb_refresh(const MomentParams& p, const float* exchanged,
                                      const int64_t* bounds, int segments, const float* scales,
                                      float* m, const float* v, float* fresh, const float* master,
                                      double* stats) {
  cuda::onebit_lamb_refresh(p, exchanged, bounds, segments, scales, m, v, fresh, master, stats,
                            *alloc_, compute_);
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
  return std::make_unique<CudaBackend>(device);
}

}  // namespace hybrid::kernels
