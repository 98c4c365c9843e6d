// A stand-in for a device backend, for host-side tests of the engine's GPU
// integration: every op runs on the real CPU backend, but "device" memory is
// bookkept (live address ranges) and may be capped, so a test can tell device
// pointers from host pointers and make the device run out of memory the way a
// GPU does (kernels::BackendOutOfMemory from allocate, not a budget).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace hybrid::test {

class DeviceDouble final : public kernels::Backend {
 public:
  // capacity, host_capacity (for allocate_host): 0 is unlimited.
  explicit DeviceDouble(size_t capacity = 0, size_t host_capacity = 0)
      : cpu_(kernels::make_cpu_backend()), capacity_(capacity), host_capacity_(host_capacity) {}

  // Whether [p, p + bytes) lies inside a live allocation of this backend.
  bool owns(const void* p, size_t bytes = 1) const {
    std::lock_guard lock(mutex_);
    const auto* c = static_cast<const char*>(p);
    auto it = live_.upper_bound(c);
    if (it == live_.begin()) return false;
    --it;
    return c >= it->first && c + bytes <= it->first + it->second;
  }
  size_t in_use() const {
    std::lock_guard lock(mutex_);
    return in_use_;
  }

  kernels::BackendKind kind() const override { return kernels::BackendKind::cpu; }
  std::string name() const override { return "device double (CPU ops)"; }
  bool supports(kernels::DType) const override { return true; }

  void* allocate(size_t bytes) override {
    std::lock_guard lock(mutex_);
    if (capacity_ && in_use_ + bytes > capacity_)
      throw kernels::BackendOutOfMemory("device double: " + std::to_string(bytes) +
                                            " bytes requested, " +
                                            std::to_string(capacity_ - in_use_) + " free",
                                        bytes);
    void* p = cpu_->allocate(bytes);
    if (p) live_[static_cast<const char*>(p)] = bytes, in_use_ += bytes;
    return p;
  }
  void deallocate(void* ptr, size_t bytes) override {
    std::lock_guard lock(mutex_);
    if (live_.erase(static_cast<const char*>(ptr))) in_use_ -= bytes;
    cpu_->deallocate(ptr, bytes);
  }
  void* allocate_host(size_t bytes) override {
    {
      std::lock_guard lock(mutex_);
      if (host_capacity_ && host_in_use_ + bytes > host_capacity_)
        throw kernels::BackendOutOfMemory(
            "device double: cannot pin " + std::to_string(bytes) + " host bytes", bytes);
      host_in_use_ += bytes;
    }
    return Backend::allocate_host(bytes);
  }
  void free_host(void* ptr, size_t bytes) override {
    {
      std::lock_guard lock(mutex_);
      host_in_use_ -= bytes;
    }
    Backend::free_host(ptr, bytes);
  }
  bool pins_host_memory() const override { return true; }

  void zero(void* p, size_t b) override { cpu_->zero(p, b); }
  void copy(void* d, const void* s, size_t b) override { cpu_->copy(d, s, b); }
  void copy_to_host(void* d, const void* s, size_t b) override { cpu_->copy_to_host(d, s, b); }
  void copy_from_host(void* d, const void* s, size_t b) override { cpu_->copy_from_host(d, s, b); }
  void synchronize() override {}

  void gemm(kernels::DType dt, bool ta, bool tb, int M, int N, int K, float alpha, const void* A,
            int lda, const void* B, int ldb, float beta, void* C, int ldc) override {
    cpu_->gemm(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  void matmul_forward(kernels::DType dt, void* out, const void* inp, const void* w, const void* b,
                      int M, int K, int N) override {
    cpu_->matmul_forward(dt, out, inp, w, b, M, K, N);
  }
  void matmul_backward(kernels::DType dt, void* dinp, void* dw, void* db, const void* dout,
                       const void* inp, const void* w, int M, int K, int N) override {
    cpu_->matmul_backward(dt, dinp, dw, db, dout, inp, w, M, K, N);
  }
  void encoder_forward(kernels::DType dt, void* out, const int32_t* tok, const int32_t* pos,
                       const void* wte, const void* wpe, int B, int T, int C) override {
    cpu_->encoder_forward(dt, out, tok, pos, wte, wpe, B, T, C);
  }
  void encoder_backward(kernels::DType dt, void* dwte, void* dwpe, const void* dout,
                        const int32_t* tok, const int32_t* pos, int B, int T, int C) override {
    cpu_->encoder_backward(dt, dwte, dwpe, dout, tok, pos, B, T, C);
  }
  void layernorm_forward(kernels::DType dt, void* out, float* mean, float* rstd, const void* inp,
                         const void* w, const void* b, int N, int C) override {
    cpu_->layernorm_forward(dt, out, mean, rstd, inp, w, b, N, C);
  }
  void layernorm_backward(kernels::DType dt, void* dinp, void* dw, void* db, const void* dout,
                          const void* inp, const void* w, const float* mean, const float* rstd,
                          int N, int C) override {
    cpu_->layernorm_backward(dt, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  }
  void rmsnorm_forward(kernels::DType dt, void* out, float* rstd, const void* inp,
                       const void* weight, int N, int C, float eps) override {
    cpu_->rmsnorm_forward(dt, out, rstd, inp, weight, N, C, eps);
  }
  void rmsnorm_backward(kernels::DType dt, void* dinp, void* dweight, const void* dout,
                        const void* inp, const void* weight, const float* rstd, int N,
                        int C) override {
    cpu_->rmsnorm_backward(dt, dinp, dweight, dout, inp, weight, rstd, N, C);
  }
  void rope_forward(kernels::DType dt, void* x, const int32_t* positions, int N, int T, int stride,
                    int heads, int head_dim, float theta) override {
    cpu_->rope_forward(dt, x, positions, N, T, stride, heads, head_dim, theta);
  }
  void rope_backward(kernels::DType dt, void* dx, const int32_t* positions, int N, int T,
                     int stride, int heads, int head_dim, float theta) override {
    cpu_->rope_backward(dt, dx, positions, N, T, stride, heads, head_dim, theta);
  }
  void swiglu_forward(kernels::DType dt, void* out, const void* gate_up, int N, int I) override {
    cpu_->swiglu_forward(dt, out, gate_up, N, I);
  }
  void swiglu_backward(kernels::DType dt, void* dgate_up, const void* dout, const void* gate_up,
                       int N, int I) override {
    cpu_->swiglu_backward(dt, dgate_up, dout, gate_up, N, I);
  }
  void gelu_forward(kernels::DType dt, void* out, const void* inp, size_t n) override {
    cpu_->gelu_forward(dt, out, inp, n);
  }
  void gelu_backward(kernels::DType dt, void* dinp, const void* inp, const void* dout,
                     size_t n) override {
    cpu_->gelu_backward(dt, dinp, inp, dout, n);
  }
  size_t attention_saved_bytes(kernels::DType dt, int B, int T, int C, int NH) const override {
    return cpu_->attention_saved_bytes(dt, B, T, C, NH);
  }
  void attention_forward(kernels::DType dt, void* out, void* saved, const void* qkv,
                         const int32_t* pos, int B, int T, int C, int NH, int NKV) override {
    cpu_->attention_forward(dt, out, saved, qkv, pos, B, T, C, NH, NKV);
  }
  void attention_backward(kernels::DType dt, void* dqkv, const void* dout, const void* qkv,
                          const void* out, const void* saved, const int32_t* pos, int B, int T,
                          int C, int NH, int NKV) override {
    cpu_->attention_backward(dt, dqkv, dout, qkv, out, saved, pos, B, T, C, NH, NKV);
  }
  void attention_cached_forward(kernels::DType dt, void* out, const void* qkv,
                                kernels::DType cache_dt, void* k_cache, void* v_cache,
                                const int* start, int B, int T, int C, int NH, int NKV,
                                int max_tokens) override {
    cpu_->attention_cached_forward(dt, out, qkv, cache_dt, k_cache, v_cache, start, B, T, C, NH,
                                   NKV, max_tokens);
  }
  void residual_forward(kernels::DType dt, void* out, const void* a, const void* b,
                        size_t n) override {
    cpu_->residual_forward(dt, out, a, b, n);
  }
  void cross_entropy_forward(kernels::DType dt, float* losses, float* lse, const void* logits,
                             const int32_t* t, int N, int V, int Vp) override {
    cpu_->cross_entropy_forward(dt, losses, lse, logits, t, N, V, Vp);
  }
  void cross_entropy_backward(kernels::DType dt, void* dlogits, const void* logits,
                              const float* lse, const int32_t* t, float dloss, int N, int V,
                              int Vp) override {
    cpu_->cross_entropy_backward(dt, dlogits, logits, lse, t, dloss, N, V, Vp);
  }
  void encoder_shard_forward(kernels::DType dt, void* out, const int32_t* tok, const int32_t* pos,
                             const void* wte, const void* wpe, int B, int T, int C, int begin,
                             int rows) override {
    cpu_->encoder_shard_forward(dt, out, tok, pos, wte, wpe, B, T, C, begin, rows);
  }
  void encoder_shard_backward(kernels::DType dt, void* dwte, void* dwpe, const void* dout,
                              const int32_t* tok, const int32_t* pos, int B, int T, int C,
                              int begin, int rows) override {
    cpu_->encoder_shard_backward(dt, dwte, dwpe, dout, tok, pos, B, T, C, begin, rows);
  }
  void cross_entropy_shard_forward(kernels::DType dt, float* stats, const void* logits,
                                   const int32_t* t, int N, int begin, int V, int Vs) override {
    cpu_->cross_entropy_shard_forward(dt, stats, logits, t, N, begin, V, Vs);
  }
  void cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                    const int32_t* t, int shards, int N) override {
    cpu_->cross_entropy_combine_shards(losses, lse, gathered, t, shards, N);
  }
  void cross_entropy_shard_backward(kernels::DType dt, void* dlogits, const void* logits,
                                    const float* lse, const int32_t* t, float dloss, int N,
                                    int begin, int V, int Vs) override {
    cpu_->cross_entropy_shard_backward(dt, dlogits, logits, lse, t, dloss, N, begin, V, Vs);
  }
  void convert(kernels::DType ddt, void* d, kernels::DType sdt, const void* s, size_t n) override {
    cpu_->convert(ddt, d, sdt, s, n);
  }
  void add(kernels::DType ddt, void* d, kernels::DType sdt, const void* s, size_t n,
           float alpha) override {
    cpu_->add(ddt, d, sdt, s, n, alpha);
  }
  void scale(kernels::DType dt, void* x, size_t n, float alpha) override {
    cpu_->scale(dt, x, n, alpha);
  }
  kernels::GradStats grad_stats(kernels::DType dt, const void* x, size_t n) override {
    return cpu_->grad_stats(dt, x, n);
  }
  void adamw(const kernels::AdamWParams& p, float* master, float* m, float* v, kernels::DType gdt,
             const void* grad, float grad_scale, kernels::DType pdt, void* param_out,
             size_t n) override {
    cpu_->adamw(p, master, m, v, gdt, grad, grad_scale, pdt, param_out, n);
  }
  void sgd(const kernels::SgdParams& p, float* master, float* buf, kernels::DType gdt,
           const void* grad, float grad_scale, kernels::DType pdt, void* param_out,
           size_t n) override {
    cpu_->sgd(p, master, buf, gdt, grad, grad_scale, pdt, param_out, n);
  }
  void lamb_moments(const kernels::LambParams& p, const float* master, float* m, float* v,
                    kernels::DType gdt, const void* grad, float grad_scale, const int64_t* bounds,
                    int segments, double* sums) override {
    cpu_->lamb_moments(p, master, m, v, gdt, grad, grad_scale, bounds, segments, sums);
  }
  void lamb_update(const kernels::LambParams& p, float* master, const float* m, const float* v,
                   const int64_t* bounds, int segments, const float* coeffs, kernels::DType pdt,
                   void* param_out) override {
    cpu_->lamb_update(p, master, m, v, bounds, segments, coeffs, pdt, param_out);
  }
  // The 1-bit ops check that every buffer they get is this backend's memory:
  // a GPU faults on a host buffer there.
  void sign_compress_worker(const kernels::SignGroup& g, uint8_t* send, float* scales) override {
    require_group("sign_compress_worker", g);
    require("sign_compress_worker send", send, size_t(g.world) * g.block);
    require("sign_compress_worker scales", scales, g.count * sizeof(float));
    cpu_->sign_compress_worker(g, send, scales);
  }
  void sign_compress_server(const kernels::SignGroup& g, const uint8_t* received,
                            const float* all_scales, uint8_t* signs, float* scales) override {
    require_group("sign_compress_server", g);
    require("sign_compress_server received", received, size_t(g.world) * g.block);
    require("sign_compress_server all_scales", all_scales, size_t(g.world) * g.count * 4);
    require("sign_compress_server signs", signs, g.block);
    require("sign_compress_server scales", scales, g.count * sizeof(float));
    cpu_->sign_compress_server(g, received, all_scales, signs, scales);
  }
  void sign_decompress(const kernels::SignGroup& g, const uint8_t* received,
                       const float* all_scales) override {
    require_group("sign_decompress", g);
    require("sign_decompress received", received, size_t(g.world) * g.block);
    require("sign_decompress all_scales", all_scales, size_t(g.world) * g.count * 4);
    cpu_->sign_decompress(g, received, all_scales);
  }
  void momentum_update(float beta1, float* m, kernels::DType gdt, const void* grad,
                       float grad_scale, size_t n) override {
    require("momentum_update m", m, n * sizeof(float));
    require("momentum_update grad", grad, n * kernels::dtype_size(gdt));
    cpu_->momentum_update(beta1, m, gdt, grad, grad_scale, n);
  }
  void frozen_variance_step(const kernels::MomentParams& p, float* master, const float* m,
                            const float* v, float* accumulator, kernels::DType pdt, void* param_out,
                            size_t n) override {
    require("frozen_variance_step master", master, n * sizeof(float));
    require("frozen_variance_step m", m, n * sizeof(float));
    require("frozen_variance_step v", v, n * sizeof(float));
    if (accumulator) require("frozen_variance_step accumulator", accumulator, n * sizeof(float));
    if (param_out)
      require("frozen_variance_step param_out", param_out, n * kernels::dtype_size(pdt));
    cpu_->frozen_variance_step(p, master, m, v, accumulator, pdt, param_out, n);
  }
  void zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps,
                           size_t n) override {
    require("zero_one_sync_begin master", master, n * sizeof(float));
    require("zero_one_sync_begin accumulator", accumulator, n * sizeof(float));
    require("zero_one_sync_begin v", v, n * sizeof(float));
    cpu_->zero_one_sync_begin(master, accumulator, v, eps, n);
  }
  void zero_one_sync_end(float* master, float* m, float* accumulator, const float* v, float eps,
                         float lr_sum, kernels::DType pdt, void* param_out, size_t n) override {
    require("zero_one_sync_end master", master, n * sizeof(float));
    require("zero_one_sync_end m", m, n * sizeof(float));
    require("zero_one_sync_end accumulator", accumulator, n * sizeof(float));
    require("zero_one_sync_end v", v, n * sizeof(float));
    if (param_out) require("zero_one_sync_end param_out", param_out, n * kernels::dtype_size(pdt));
    cpu_->zero_one_sync_end(master, m, accumulator, v, eps, lr_sum, pdt, param_out, n);
  }
  void onebit_lamb_momentum(float beta1, const float* m, kernels::DType gdt, const void* grad,
                            float grad_scale, const int64_t* bounds, int segments,
                            const float* scales, float* out) override {
    const auto n = size_t(segments > 0 ? bounds[segments] : 0);
    require("onebit_lamb_momentum m", m, n * sizeof(float));
    require("onebit_lamb_momentum grad", grad, n * kernels::dtype_size(gdt));
    require("onebit_lamb_momentum out", out, n * sizeof(float));
    cpu_->onebit_lamb_momentum(beta1, m, gdt, grad, grad_scale, bounds, segments, scales, out);
  }
  void segment_sum_squares(const float* x, const int64_t* bounds, int segments,
                           double* sums) override {
    require("segment_sum_squares x", x, size_t(segments > 0 ? bounds[segments] : 0) * 4);
    cpu_->segment_sum_squares(x, bounds, segments, sums);
  }
  void onebit_lamb_refresh(const kernels::MomentParams& p, const float* exchanged,
                           const int64_t* bounds, int segments, const float* scales, float* m,
                           const float* v, float* fresh, const float* master,
                           double* stats) override {
    const size_t bytes = size_t(segments > 0 ? bounds[segments] : 0) * sizeof(float);
    require("onebit_lamb_refresh exchanged", exchanged, bytes);
    require("onebit_lamb_refresh m", m, bytes);
    require("onebit_lamb_refresh v", v, bytes);
    require("onebit_lamb_refresh fresh", fresh, bytes);
    require("onebit_lamb_refresh master", master, bytes);
    cpu_->onebit_lamb_refresh(p, exchanged, bounds, segments, scales, m, v, fresh, master, stats);
  }
  // What the 1-bit ops got that is not this backend's memory, and the buffers they checked.
  std::vector<std::string> foreign_buffers() const {
    std::lock_guard lock(mutex_);
    return foreign_;
  }
  size_t onebit_buffers_checked() const {
    std::lock_guard lock(mutex_);
    return checked_;
  }

 private:
  void require(const std::string& what, const void* p, size_t bytes) {
    const bool ok = bytes == 0 || owns(p, bytes);
    std::lock_guard lock(mutex_);
    ++checked_;
    if (!ok) foreign_.push_back(what + " (" + std::to_string(bytes) + " bytes)");
  }
  void require_group(const std::string& op, const kernels::SignGroup& g) {
    for (size_t k = 0; k < g.count; ++k) {
      const kernels::SignTensor& t = g.tensors[k];
      require(op + " data", t.data, t.n * sizeof(float));
      require(op + " worker_error", t.worker_error, t.padded * sizeof(float));
      require(op + " server_error", t.server_error, g.chunk(k) * sizeof(float));
    }
  }

  std::unique_ptr<kernels::Backend> cpu_;
  size_t capacity_;
  size_t host_capacity_;
  size_t host_in_use_ = 0;
  mutable std::mutex mutex_;
  std::map<const char*, size_t> live_;
  size_t in_use_ = 0;
  std::vector<std::string> foreign_;
  size_t checked_ = 0;
};

}  // namespace hybrid::test
