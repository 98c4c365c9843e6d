#include "engine/model/layers.h"

#include "profiler/flops.h"

namespace hybrid::engine {

namespace fl = profiler::flops;

Embedding::Embedding(std::string name, int padded_vocab, int max_seq, int C)
    : Module(std::move(name), "Embedding"), C_(C) {
  wte_ = declare_param("wte", {padded_vocab, C}, ParamInit::normal, 0.02f);
  wpe_ = declare_param("wpe", {max_seq, C}, ParamInit::normal, 0.01f);
}

void Embedding::forward(ExecutionContext& ctx) {
  ctx.backend().encoder_forward(ctx.dtype(), out, ctx.tokens(), ctx.param(*wte_), ctx.param(*wpe_),
                                ctx.B(), ctx.T(), C_);
}

void Embedding::backward(ExecutionContext& ctx) {
  ctx.backend().encoder_backward(ctx.dtype(), ctx.grad(*wte_), ctx.grad(*wpe_), dout, ctx.tokens(),
                                 ctx.B(), ctx.T(), C_);
}

LayerNorm::LayerNorm(std::string name, int C) : Module(std::move(name), "LayerNorm"), C_(C) {
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

Linear::Linear(std::string name, int in_features, int out_features, bool bias, float init_std,
               ParamSpec* tied_weight)
    : Module(std::move(name), "Linear"), K_(in_features), N_(out_features) {
  if (tied_weight) {
    weight_ = tied_weight;
    use_param(tied_weight);
  } else {
    weight_ = declare_param("weight", {out_features, in_features}, ParamInit::normal, init_std);
  }
  if (bias) bias_ = declare_param("bias", {out_features}, ParamInit::zeros);
}

void Linear::forward(ExecutionContext& ctx) {
  ctx.backend().matmul_forward(ctx.dtype(), out, in, ctx.param(*weight_),
                               bias_ ? ctx.param(*bias_) : nullptr, ctx.B() * ctx.T(), K_, N_);
}

void Linear::backward(ExecutionContext& ctx) {
  ctx.backend().matmul_backward(ctx.dtype(), din, ctx.grad(*weight_),
                                bias_ ? ctx.grad(*bias_) : nullptr, dout, in, ctx.param(*weight_),
                                ctx.B() * ctx.T(), K_, N_);
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
  ctx.backend().attention_forward(ctx.dtype(), out, saved, qkv, ctx.B(), ctx.T(), C_, NH_);
}
void AttentionCore::backward(ExecutionContext& ctx) {
  ctx.backend().attention_backward(ctx.dtype(), dqkv, dout, qkv, out, saved, ctx.B(), ctx.T(), C_,
                                   NH_);
}
uint64_t AttentionCore::forward_flops(int B, int T) const {
  return fl::attention_forward(B, T, C_, NH_, /*causal=*/true);
}
uint64_t AttentionCore::backward_flops(int B, int T) const {
  return fl::attention_backward(B, T, C_, NH_, /*causal=*/true);
}

void CrossEntropyLoss::forward(ExecutionContext& ctx) {
  ctx.backend().cross_entropy_forward(ctx.dtype(), losses, lse, logits, ctx.targets(),
                                      ctx.B() * ctx.T(), V_, Vp_);
}
void CrossEntropyLoss::backward(ExecutionContext& ctx) {
  ctx.backend().cross_entropy_backward(ctx.dtype(), logits, logits, lse, ctx.targets(), ctx.dloss(),
                                       ctx.B() * ctx.T(), V_, Vp_);
}
uint64_t CrossEntropyLoss::forward_flops(int B, int T) const {
  return fl::cross_entropy_forward(int64_t(B) * T, V_);
}
uint64_t CrossEntropyLoss::backward_flops(int B, int T) const {
  return fl::cross_entropy_backward(int64_t(B) * T, V_);
}

}  // namespace hybrid::engine
