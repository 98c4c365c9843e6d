#include "engine/model/layers.h"

#include <algorithm>

#include "profiler/flops.h"

namespace hybrid::engine {

namespace fl = profiler::flops;

Embedding::Embedding(std::string name, int padded_vocab, int max_seq, int C, TensorSlice tp)
    : Module(std::move(name), "Embedding"), C_(C), tp_(tp) {
  wte_ = declare_param("wte", {padded_vocab, C}, ParamInit::normal, 0.02f,
                       {.dim = 0, .groups = {}, .parts = tp.parts, .index = tp.index});
  if (max_seq > 0) wpe_ = declare_param("wpe", {max_seq, C}, ParamInit::normal, 0.01f);
  vocab_rows_ = int(wte_->shape[0]);
  vocab_begin_ = tp.index * vocab_rows_;
}

// Positions: the context's (packed documents, a generating forward's rows), else t.
void Embedding::forward(ExecutionContext& ctx) {
  if (tp_.parts == 1 && wpe_)
    return ctx.backend().encoder_forward(ctx.dtype(), out, ctx.tokens(), ctx.positions(),
                                         ctx.param(*wte_), ctx.param(*wpe_), ctx.B(), ctx.T(), C_);
  // Every token's row is on one rank; wpe is added once, before the sum.
  ctx.backend().encoder_shard_forward(ctx.dtype(), out, ctx.tokens(), ctx.positions(),
                                      ctx.param(*wte_),
                                      wpe_ && tp_.index == 0 ? ctx.param(*wpe_) : nullptr, ctx.B(),
                                      ctx.T(), C_, vocab_begin_, vocab_rows_);
  if (tp_.parts > 1) ctx.tp_all_reduce(out, size_t(ctx.B()) * size_t(ctx.T()) * size_t(C_));
}

// dout is whole on every rank: each updates its own rows, and all of wpe alike.
void Embedding::backward(ExecutionContext& ctx) {
  if (tp_.parts == 1 && wpe_)
    return ctx.backend().encoder_backward(ctx.dtype(), ctx.grad(*wte_), ctx.grad(*wpe_), dout,
                                          ctx.tokens(), ctx.positions(), ctx.B(), ctx.T(), C_);
  ctx.backend().encoder_shard_backward(
      ctx.dtype(), ctx.grad(*wte_), wpe_ ? ctx.grad(*wpe_) : nullptr, dout, ctx.tokens(),
      ctx.positions(), ctx.B(), ctx.T(), C_, vocab_begin_, vocab_rows_);
}

LayerNorm::LayerNorm(std::string name, int C) : Norm(std::move(name), "LayerNorm"), C_(C) {
  weight_ = declare_param("weight", {C}, ParamInit::ones);
  bias_ = declare_param("bias", {C}, ParamInit::zeros);
}

void LayerNorm::forward(ExecutionContext& ctx) {
  ctx.backend().layernorm_forward(ctx.dtype(), out, mean, rstd, in, ctx.param(*weight_),
                                  ctx.param(*bias_), ctx.B() * ctx.T(), C_);
}

void LayerNorm::backward(ExecutionContext& ctx) {
  ctx.backend().layernorm_backward(ctx.dtype(), din, ctx.grad(*weight_), ctx.grad(*bias_), dout, in,
                                   ctx.param(*weight_), mean, rstd, ctx.B() * ctx.T(), C_);
}

uint64_t LayerNorm::forward_flops(int B, int T) const {
  return fl::layernorm_forward(int64_t(B) * T, C_);
}
uint64_t LayerNorm::backward_flops(int B, int T) const {
  return fl::layernorm_backward(int64_t(B) * T, C_);
}

RMSNorm::RMSNorm(std::string name, int C, float eps)
    : Norm(std::move(name), "RMSNorm"), C_(C), eps_(eps) {
  weight_ = declare_param("weight", {C}, ParamInit::ones);
}

void RMSNorm::forward(ExecutionContext& ctx) {
  ctx.backend().rmsnorm_forward(ctx.dtype(), out, rstd, in, ctx.param(*weight_), ctx.B() * ctx.T(),
                                C_, eps_);
}

void RMSNorm::backward(ExecutionContext& ctx) {
  ctx.backend().rmsnorm_backward(ctx.dtype(), din, ctx.grad(*weight_), dout, in,
                                 ctx.param(*weight_), rstd, ctx.B() * ctx.T(), C_);
}

uint64_t RMSNorm::forward_flops(int B, int T) const {
  return fl::rmsnorm_forward(int64_t(B) * T, C_);
}
uint64_t RMSNorm::backward_flops(int B, int T) const {
  return fl::rmsnorm_backward(int64_t(B) * T, C_);
}

void Rope::forward(ExecutionContext& ctx) {
  ctx.backend().rope_forward(ctx.dtype(), qkv, ctx.positions(), ctx.B() * ctx.T(), ctx.T(), stride_,
                             heads_, head_dim_, theta_);
}
void Rope::backward(ExecutionContext& ctx) {
  ctx.backend().rope_backward(ctx.dtype(), dqkv, ctx.positions(), ctx.B() * ctx.T(), ctx.T(),
                              stride_, heads_, head_dim_, theta_);
}
uint64_t Rope::forward_flops(int B, int T) const {
  return fl::rope(int64_t(B) * T * heads_ * head_dim_);
}
uint64_t Rope::backward_flops(int B, int T) const { return forward_flops(B, T); }

void SwiGlu::forward(ExecutionContext& ctx) {
  ctx.backend().swiglu_forward(ctx.dtype(), out, gate_up, ctx.B() * ctx.T(), width_);
}
void SwiGlu::backward(ExecutionContext& ctx) {
  ctx.backend().swiglu_backward(ctx.dtype(), dgate_up, dout, gate_up, ctx.B() * ctx.T(), width_);
}
uint64_t SwiGlu::forward_flops(int B, int T) const {
  return fl::swiglu_forward(int64_t(B) * T * width_);
}
uint64_t SwiGlu::backward_flops(int B, int T) const {
  return fl::swiglu_backward(int64_t(B) * T * width_);
}

Linear::Linear(std::string name, int in_features, int out_features, bool bias, float init_std,
               ParamSpec* tied_weight, LinearSplit split)
    : Module(std::move(name), "Linear"), K_(in_features), N_(out_features), split_(split) {
  const TensorSlice tp = split.tp;
  const bool column = split.mode == LinearSplit::column, row = split.mode == LinearSplit::row;
  const TensorShard rows{.dim = 0, .groups = split.groups, .parts = tp.parts, .index = tp.index};
  if (tied_weight) {
    weight_ = tied_weight;
    use_param(tied_weight);
  } else {
    weight_ = declare_param(
        "weight", {out_features, in_features}, ParamInit::normal, init_std,
        column ? rows
        : row  ? TensorShard{.dim = 1, .groups = {}, .parts = tp.parts, .index = tp.index}
               : TensorShard{});
  }
  if (bias)
    bias_ = declare_param("bias", {out_features}, ParamInit::zeros, 0.0f,
                          column ? rows : TensorShard{});
  if (column) N_ /= tp.parts;
  if (row) K_ /= tp.parts;
}

void Linear::forward(ExecutionContext& ctx) {
  const bool row = split_.mode == LinearSplit::row;
  const bool adds_bias = bias_ && (!row || split_.tp.index == 0);  // a row-parallel bias once
  ctx.backend().matmul_forward(ctx.dtype(), out, in, ctx.param(*weight_),
                               adds_bias ? ctx.param(*bias_) : nullptr, ctx.B() * ctx.T(), K_, N_);
  if (row) ctx.tp_all_reduce(out, size_t(ctx.B()) * size_t(ctx.T()) * size_t(N_));
}

void Linear::backward(ExecutionContext& ctx) {
  ctx.backend().matmul_backward(ctx.dtype(), din, ctx.grad(*weight_),
                                bias_ ? ctx.grad(*bias_) : nullptr, dout, in, ctx.param(*weight_),
                                ctx.B() * ctx.T(), K_, N_);
  if (split_.mode == LinearSplit::column && din)
    ctx.tp_all_reduce(din, size_t(ctx.B()) * size_t(ctx.T()) * size_t(K_));
}

uint64_t Linear::forward_flops(int B, int T) const {
  return fl::matmul_forward(int64_t(B) * T, K_, N_, bias_ != nullptr);
}
uint64_t Linear::backward_flops(int B, int T) const {
  return fl::matmul_backward(int64_t(B) * T, K_, N_, bias_ != nullptr, din != nullptr);
}

void Gelu::forward(ExecutionContext& ctx) {
  ctx.backend().gelu_forward(ctx.dtype(), out, in, size_t(ctx.B()) * ctx.T() * width_);
}
void Gelu::backward(ExecutionContext& ctx) {
  ctx.backend().gelu_backward(ctx.dtype(), din, in, dout, size_t(ctx.B()) * ctx.T() * width_);
}
uint64_t Gelu::forward_flops(int B, int T) const {
  return fl::gelu_forward(int64_t(B) * T * width_);
}
uint64_t Gelu::backward_flops(int B, int T) const {
  return fl::gelu_backward(int64_t(B) * T * width_);
}

void AttentionCore::forward(ExecutionContext& ctx) {
  if (const Decoding* d = ctx.decoding()) {
    // This call's rows start at cache row first_row.
    const size_t row = size_t(NKV_) * size_t(d->max_tokens) * size_t(C_ / NH_) *
                       kernels::dtype_size(d->cache_dtype) * size_t(d->first_row);
    return ctx.backend().attention_cached_forward(ctx.dtype(), out, qkv, d->cache_dtype,
                                                  static_cast<char*>(k_cache) + row,
                                                  static_cast<char*>(v_cache) + row, d->start,
                                                  ctx.B(), ctx.T(), C_, NH_, NKV_, d->max_tokens);
  }
  ctx.backend().attention_forward(ctx.dtype(), out, saved, qkv, ctx.positions(), ctx.B(), ctx.T(),
                                  C_, NH_, NKV_);
}
void AttentionCore::backward(ExecutionContext& ctx) {
  ctx.backend().attention_backward(ctx.dtype(), dqkv, dout, qkv, out, saved, ctx.positions(),
                                   ctx.B(), ctx.T(), C_, NH_, NKV_);
}
uint64_t AttentionCore::forward_flops(int B, int T) const {
  return fl::attention_forward(B, T, C_, NH_, /*causal=*/true);
}
uint64_t AttentionCore::backward_flops(int B, int T) const {
  return fl::attention_backward(B, T, C_, NH_, /*causal=*/true);
}

CrossEntropyLoss::CrossEntropyLoss(std::string name, int V, int Vp, TensorSlice tp)
    : Module(std::move(name), "CrossEntropyLoss"),
      V_(V),
      Vp_(Vp),
      tp_(tp),
      vocab_begin_(tp.index * (Vp / tp.parts)),
      vocab_real_(std::clamp(V - vocab_begin_, 0, Vp / tp.parts)),
      vocab_rows_(Vp / tp.parts) {}

void CrossEntropyLoss::forward(ExecutionContext& ctx) {
  const int N = ctx.B() * ctx.T();
  auto& be = ctx.backend();
  if (tp_.parts == 1)
    return be.cross_entropy_forward(ctx.dtype(), losses, lse, logits, ctx.targets(), N, V_, Vp_);
  be.cross_entropy_shard_forward(ctx.dtype(), shard_stats, logits, ctx.targets(), N, vocab_begin_,
                                 vocab_real_, vocab_rows_);
  ctx.tp_all_gather(shard_stats, gathered_stats, 2 * size_t(N));
  be.cross_entropy_combine_shards(losses, lse, gathered_stats, ctx.targets(), tp_.parts, N);
}

void CrossEntropyLoss::backward(ExecutionContext& ctx) {
  const int N = ctx.B() * ctx.T();
  if (tp_.parts == 1)
    return ctx.backend().cross_entropy_backward(ctx.dtype(), logits, logits, lse, ctx.targets(),
                                                ctx.dloss(), N, V_, Vp_);
  ctx.backend().cross_entropy_shard_backward(ctx.dtype(), logits, logits, lse, ctx.targets(),
                                             ctx.dloss(), N, vocab_begin_, vocab_real_,
                                             vocab_rows_);
}
uint64_t CrossEntropyLoss::forward_flops(int B, int T) const {
  return fl::cross_entropy_forward(int64_t(B) * T, vocab_real_);
}
uint64_t CrossEntropyLoss::backward_flops(int B, int T) const {
  return fl::cross_entropy_backward(int64_t(B) * T, vocab_real_);
}

}  // namespace hybrid::engine
