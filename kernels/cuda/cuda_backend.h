// The CUDA backend: every op of kernels/ops.h on one device, fp32/fp16/bf16
// storage with fp32 accumulation. Work is queued on the backend's compute
// stream; a second stream is reserved for communication (NCCL), ordered against
// the compute stream with events by the communicator. Memory comes from a
// caching allocator (kernels/cuda/caching_allocator.h). The calling thread's
// current device is set to the backend's device on construction; use a backend
// from threads whose current device is that device.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/ops.h"

namespace hybrid::kernels {

namespace cuda {
class LtGemm;
}

// Number of usable CUDA devices: 0 when the runtime reports an error (no driver,
// no device), with the runtime's message in *why ("cudaGetDeviceCount: ...").
int cuda_device_count(std::string* why = nullptr);

class CudaBackend final : public Backend {
 public:
  // Throws CudaError when the device cannot be used (its message names the device).
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  BackendKind kind() const override { return BackendKind::cuda; }
  std::string name() const override { return name_; }
  bool supports(DType dt) const override;

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  void zero(void* ptr, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void synchronize() override;

  // Page-locked host memory and the transfers of the offloaded optimizer, on a
  // copy stream of their own (kernels/cuda/host_transfer.cpp).
  void* allocate_host(size_t bytes) override;
  void free_host(void* ptr, size_t bytes) override;
  bool pins_host_memory() const override { return true; }
  uint64_t copy_to_host_async(void* host_dst, const void* src, size_t bytes) override;
  uint64_t copy_from_host_async(void* dst, const void* host_src, size_t bytes) override;
  void wait_transfer(uint64_t ticket) override;

  void* compute_stream_handle() const override { return compute_; }
  void* comm_stream_handle() const override { return comm_; }
  int device_index() const override { return device_; }

  void gemm(DType dt, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
            int lda, const void* B, int ldb, float beta, void* C, int ldc) override;
  void matmul_forward(DType dt, void* out, const void* inp, const void* weight, const void* bias,
                      int M, int K, int N) override;
  void matmul_backward(DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                       const void* inp, const void* weight, int M, int K, int N) override;

  void encoder_forward(DType dt, void* out, const int32_t* tokens, const int32_t* positions,
                       const void* wte, const void* wpe, int B, int T, int C) override;
  void encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                        const int32_t* positions, int B, int T, int C) override;
  void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp,
                         const void* weight, const void* bias, int N, int C) override;
  void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                          const void* inp, const void* weight, const float* mean, const float* rstd,
                          int N, int C) override;
  void rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp, const void* weight, int N,
                       int C, float eps) override;
  void rmsnorm_backward(DType dt, void* dinp, void* dweight, const void* dout, const void* inp,
                        const void* weight, const float* rstd, int N, int C) override;
  void rope_forward(DType dt, void* x, const int32_t* positions, int N, int T, int stride,
                    int heads, int head_dim, float theta) override;
  void rope_backward(DType dt, void* dx, const int32_t* positions, int N, int T, int stride,
                     int heads, int head_dim, float theta) override;
  void swiglu_forward(DType dt, void* out, const void* gate_up, int N, int I) override;
  void swiglu_backward(DType dt, void* dgate_up, const void* dout, const void* gate_up, int N,
                       int I) override;
  void gelu_forward(DType dt, void* out, const void* inp, size_t n) override;
  void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n) override;
  size_t attention_saved_bytes(DType dt, int B, int T, int C, int NH) const override;
  void attention_forward(DType dt, void* out, void* saved, const void* qkv,
                         const int32_t* positions, int B, int T, int C, int NH, int NKV) override;
  void attention_backward(DType dt, void* dqkv, const void* dout, const void* qkv, const void* out,
                          const void* saved, const int32_t* positions, int B, int T, int C, int NH,
                          int NKV) override;
  void attention_cached_forward(DType dt, void* out, const void* qkv, DType cache_dt, void* k_cache,
                                void* v_cache, const int* start, int B, int T, int C, int NH,
                                int NKV, int max_tokens) override;
  void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n) override;
  void cross_entropy_forward(DType dt, float* losses, float* lse, const void* logits,
                             const int32_t* targets, int N, int V, int Vp) override;
  void cross_entropy_backward(DType dt, void* dlogits, const void* logits, const float* lse,
                              const int32_t* targets, float dloss, int N, int V, int Vp) override;

  void encoder_shard_forward(DType dt, void* out, const int32_t* tokens, const int32_t* positions,
                             const void* wte, const void* wpe, int B, int T, int C, int begin,
                             int rows) override;
  void encoder_shard_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                              const int32_t* tokens, const int32_t* positions, int B, int T, int C,
                              int begin, int rows) override;
  void cross_entropy_shard_forward(DType dt, float* stats, const void* logits,
                                   const int32_t* targets, int N, int begin, int V,
                                   int Vs) override;
  void cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                    const int32_t* targets, int shards, int N) override;
  void cross_entropy_shard_backward(DType dt, void* dlogits, const void* logits, const float* lse,
                                    const int32_t* targets, float dloss, int N, int begin, int V,
                                    int Vs) override;

  void convert(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n) override;
  void add(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n, float alpha) override;
  void scale(DType dt, void* x, size_t n, float alpha) override;
  GradStats grad_stats(DType dt, const void* x, size_t n) override;
  void adamw(const AdamWParams& p, float* master, float* m, float* v, DType grad_dt,
             const void* grad, float grad_scale, DType param_dt, void* param_out,
             size_t n) override;
  void sgd(const SgdParams& p, float* master, float* momentum_buf, DType grad_dt, const void* grad,
           float grad_scale, DType param_dt, void* param_out, size_t n) override;
  void lamb_moments(const LambParams& p, const float* master, float* m, float* v, DType grad_dt,
                    const void* grad, float grad_scale, const int64_t* bounds, int segments,
                    double* sums) override;
  void lamb_update(const LambParams& p, float* master, const float* m, const float* v,
                   const int64_t* bounds, int segments, const float* coeffs, DType param_dt,
                   void* param_out) override;

  void sign_compress_worker(const SignGroup& g, uint8_t* send, float* scales) override;
  void sign_compress_server(const SignGroup& g, const uint8_t* received, const float* all_scales,
                            uint8_t* signs, float* scales) override;
  void sign_decompress(const SignGroup& g, const uint8_t* received,
                       const float* all_scales) override;
  void momentum_update(float beta1, float* m, DType grad_dt, const void* grad, float grad_scale,
                       size_t n) override;
  void frozen_variance_step(const MomentParams& p, float* master, const float* m, const float* v,
                            float* accumulator, DType param_dt, void* param_out, size_t n) override;
  void zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps,
                           size_t n) override;
  void zero_one_sync_end(float* master, float* m, float* accumulator, const float* v, float eps,
                         float lr_sum, DType param_dt, void* param_out, size_t n) override;
  void onebit_lamb_momentum(float beta1, const float* m, DType grad_dt, const void* grad,
                            float grad_scale, const int64_t* bounds, int segments,
                            const float* scales, float* out) override;
  void segment_sum_squares(const float* x, const int64_t* bounds, int segments,
                           double* sums) override;
  void onebit_lamb_refresh(const MomentParams& p, const float* exchanged, const int64_t* bounds,
                           int segments, const float* scales, float* m, const float* v,
                           float* fresh, const float* master, double* stats) override;

  // ---- CUDA-only extras -------------------------------------------------------
  // out = gelu(inp · weightᵀ + bias), with the pre-activation written to
  // pre_gelu [M, N] (what gelu_backward needs): one cuBLASLt call with the
  // GELU_AUX_BIAS epilogue where the library supports the shape.
  void matmul_forward_gelu(DType dt, void* out, void* pre_gelu, const void* inp, const void* weight,
                           const void* bias, int M, int K, int N);

  int device() const { return device_; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t comm_stream() const { return comm_; }
  cuda::AllocatorStats memory_stats() const { return alloc_->stats(); }
  void reset_peak_memory() { alloc_->reset_peak(); }
  void empty_cache() { alloc_->empty_cache(); }
  cuda::LtGemm& gemm_engine() { return *gemm_; }
  // fp32 GEMMs on TF32 tensor cores (off by default: fp32 means fp32).
  void set_allow_tf32(bool on);

 private:
  int device_;
  std::string name_;
  int cc_major_ = 0;
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_ = nullptr;
  cudaStream_t copy_ = nullptr;  // host transfers; created on first use
  uint64_t next_ticket_ = 1;
  std::unordered_map<uint64_t, cudaEvent_t> transfers_;  // ticket → completion event
  std::vector<cudaEvent_t> spare_events_;
  std::unique_ptr<cuda::CachingAllocator> alloc_;
  std::unique_ptr<cuda::LtGemm> gemm_;

  uint64_t queue_transfer(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
  void release_transfer_resources() noexcept;
};

// Throws CudaError naming the device when it cannot be opened.
std::unique_ptr<Backend> make_cuda_backend(int device);

}  // namespace hybrid::kernels
