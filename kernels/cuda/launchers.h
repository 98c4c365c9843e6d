// Host-callable launchers of the CUDA kernels, one op family per .cu file. Each
// takes the stream it runs on; those needing scratch memory take the caching
// allocator (scratch is freed stream-ordered, see caching_allocator.h).
// Pointers are device pointers; dtypes are storage dtypes, arithmetic is fp32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/ops.h"

namespace hybrid::kernels::cuda {

class CachingAllocator;
class LtGemm;

// Scratch memory released (into the cache) at scope exit.
class Scratch {
 public:
  Scratch(CachingAllocator& alloc, size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  CachingAllocator& alloc_;
  void* ptr_;
};

// elementwise.cu
void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n, cudaStream_t s);
void convert(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n, cudaStream_t s);
void add(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n, float alpha,
         cudaStream_t s);
void scale(DType dt, void* x, size_t n, float alpha, cudaStream_t s);
// out[m, :] += bias for M rows of N (fallback when cuBLASLt has no bias epilogue).
void add_bias_rows(DType dt, void* out, const void* bias, int M, int N, cudaStream_t s);

// gelu.cu (tanh approximation)
void gelu_forward(DType dt, void* out, const void* inp, size_t n, cudaStream_t s);
void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n,
                   cudaStream_t s);

// column_sum.cu: dst[N] += Σ_rows src[M, N], deterministic (fixed-order partials).
void column_sum_accumulate(DType dt, void* dst, const void* src, int M, int N,
                           CachingAllocator& alloc, cudaStream_t s);

// layernorm.cu
void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp,
                       const void* weight, const void* bias, int N, int C, cudaStream_t s);
void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                        const void* inp, const void* weight, const float* mean, const float* rstd,
                        int N, int C, CachingAllocator& alloc, cudaStream_t s);

// llama_ops.cu: RMSNorm, rotary embedding (in place; inverse: the transpose), SwiGLU.
void rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp, const void* weight, int N,
                     int C, float eps, cudaStream_t s);
void rmsnorm_backward(DType dt, void* dinp, void* dweight, const void* dout, const void* inp,
                      const void* weight, const float* rstd, int N, int C, CachingAllocator& alloc,
                      cudaStream_t s);
void rope(DType dt, void* x, const int32_t* positions, int N, int T, int stride, int heads,
          int head_dim, float theta, bool inverse, cudaStream_t s);
void swiglu_forward(DType dt, void* out, const void* gate_up, int N, int I, cudaStream_t s);
void swiglu_backward(DType dt, void* dgate_up, const void* dout, const void* gate_up, int N, int I,
                     cudaStream_t s);

// encoder.cu (backward is deterministic: tokens sorted, one pass per distinct token).
// wte holds the vocabulary ids [begin, begin + rows) (the whole vocabulary: 0 and
// INT_MAX); other tokens add nothing. A null wpe / dwpe is skipped.
void encoder_forward(DType dt, void* out, const int32_t* tokens, const int32_t* positions,
                     const void* wte, const void* wpe, int B, int T, int C, int begin, int rows,
                     cudaStream_t s);
void encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                      const int32_t* positions, int B, int T, int C, int begin, int rows,
                      CachingAllocator& alloc, cudaStream_t s);

// cross_entropy.cu. Column j is vocabulary id begin + j (whole vocabulary: begin 0).
// Forward writes each non-null output: losses, lse, target_logit (0 when the
// target is outside the V columns).
void cross_entropy_forward(DType dt, float* losses, float* lse, float* target_logit,
                           const void* logits, const int32_t* targets, int N, int begin, int V,
                           int Vp, cudaStream_t s);
void cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                  const int32_t* targets, int shards, int N, cudaStream_t s);
void cross_entropy_backward(DType dt, void* dlogits, const void* logits, const float* lse,
                            const int32_t* targets, float dloss, int N, int begin, int V, int Vp,
                            cudaStream_t s);

// attention.cu (cuBLASLt batched GEMMs + fused causal softmax; saves the
// attention matrix [B, NH, T, T] in dt)
size_t attention_saved_bytes(DType dt, int B, int T, int C, int NH);
void attention_forward(DType dt, void* out, void* saved, const void* qkv, const int32_t* positions,
                       int B, int T, int C, int NH, int NKV, LtGemm& gemm, CachingAllocator& alloc,
                       cudaStream_t s);
void attention_backward(DType dt, void* dqkv, const void* dout, const void* qkv, const void* saved,
                        const int32_t* positions, int B, int T, int C, int NH, int NKV,
                        LtGemm& gemm, CachingAllocator& alloc, cudaStream_t s);

// attention_cached.cu (a warp per query over the cache; generation)
void attention_cached_forward(DType dt, void* out, const void* qkv, DType cache_dt, void* k_cache,
                              void* v_cache, const int* start, int B, int T, int C, int NH, int NKV,
                              int max_tokens, CachingAllocator& alloc, cudaStream_t s);

// grad_stats.cu: one pass; the result is copied to the host (synchronises s).
GradStats grad_stats(DType dt, const void* x, size_t n, CachingAllocator& alloc, cudaStream_t s);

// adamw.cu
void adamw(const AdamWParams& p, float* master, float* m, float* v, DType grad_dt, const void* grad,
           float grad_scale, DType param_dt, void* param_out, size_t n, cudaStream_t s);

// sgd.cu
void sgd(const SgdParams& p, float* master, float* momentum_buf, DType grad_dt, const void* grad,
         float grad_scale, DType param_dt, void* param_out, size_t n, cudaStream_t s);

// lamb.cu: pass 1 synchronises s (the per-segment sums go to the host).
void lamb_moments(const LambParams& p, const float* master, float* m, float* v, DType grad_dt,
                  const void* grad, float grad_scale, const int64_t* bounds, int segments,
                  double* sums, CachingAllocator& alloc, cudaStream_t s);
void lamb_update(const LambParams& p, float* master, const float* m, const float* v,
                 const int64_t* bounds, int segments, const float* coeffs, DType param_dt,
                 void* param_out, CachingAllocator& alloc, cudaStream_t s);

// sign_compression.cu: the 1-bit compressed all-reduce's phases.
void sign_compress_worker(const SignGroup& g, uint8_t* send, float* scales, CachingAllocator& alloc,
                          cudaStream_t s);
void sign_compress_server(const SignGroup& g, const uint8_t* received, const float* all_scales,
                          uint8_t* signs, float* scales, CachingAllocator& alloc, cudaStream_t s);
void sign_decompress(const SignGroup& g, const uint8_t* received, const float* all_scales,
                     CachingAllocator& alloc, cudaStream_t s);

// onebit_steps.cu
void momentum_update(float beta1, float* m, DType grad_dt, const void* grad, float grad_scale,
                     size_t n, cudaStream_t s);
void frozen_variance_step(const MomentParams& p, float* master, const float* m, const float* v,
                          float* accumulator, DType param_dt, void* param_out, size_t n,
                          cudaStream_t s);
void zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps, size_t n,
                         cudaStream_t s);
void zero_one_sync_end(float* master, float* m, float* accumulator, const float* v, float eps,
                       float lr_sum, DType param_dt, void* param_out, size_t n, cudaStream_t s);

// onebit_lamb.cu: the statistics go to the host (synchronises s).
void onebit_lamb_momentum(float beta1, const float* m, DType grad_dt, const void* grad,
                          float grad_scale, const int64_t* bounds, int segments,
                          const float* scales, float* out, CachingAllocator& alloc, cudaStream_t s);
void segment_sum_squares(const float* x, const int64_t* bounds, int segments, double* sums,
                         CachingAllocator& alloc, cudaStream_t s);
void onebit_lamb_refresh(const MomentParams& p, const float* exchanged, const int64_t* bounds,
                         int segments, const float* scales, float* m, const float* v, float* fresh,
                         const float* master, double* stats, CachingAllocator& alloc,
                         cudaStream_t s);

}  // namespace hybrid::kernels::cuda
