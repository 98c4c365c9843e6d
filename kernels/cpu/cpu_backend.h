// The CPU backend: host memory (64-byte aligned), OpenMP across cores, fp32
// arithmetic on fp32/fp16/bf16 storage, GEMM through oneDNN (kernels/cpu/gemm.h).
//
// Each op family lives in its own file (matmul.cpp, layernorm.cpp, ...) and
// defines its CpuBackend members there; this header only gathers them.
#pragma once

#include "kernels/ops.h"

namespace hybrid::kernels {

class CpuBackend final : public Backend {
 public:
  CpuBackend();

  BackendKind kind() const override { return BackendKind::cpu; }
  std::string name() const override;
  bool supports(DType) const override { return true; }

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  void zero(void* ptr, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void synchronize() override {}

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

  void gelu_forward(DType dt, void* out, const void* inp, size_t n) override;
  void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n) override;

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
};

}  // namespace hybrid::kernels
