// Leaf modules of a GPT-2: each wraps one backend op family. Their activation
// buffers are wired by the model when the micro-batch shape is known (bind), so
// forward/backward take only the context. Every gradient they write follows the
// ops' "+=" contract; the caller zeroes gradient buffers before a backward pass.
#pragma once

#include "engine/model/execution_context.h"
#include "engine/model/module.h"

namespace hybrid::engine {

// Token + position embedding: out = wte[tokens] + wpe[0..T).
class Embedding final : public Module {
 public:
  Embedding(std::string name, int padded_vocab, int max_seq, int C);
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  ParamSpec* wte() const { return wte_; }
  ParamSpec* wpe() const { return wpe_; }

  void* out = nullptr;
  const void* dout = nullptr;

 private:
  ParamSpec* wte_;
  ParamSpec* wpe_;
  int C_;
};

class LayerNorm final : public Module {
 public:
  LayerNorm(std::string name, int C);
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  const void* in = nullptr;
  void* out = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  void* din = nullptr;
  const void* dout = nullptr;

 private:
  ParamSpec* weight_;
  ParamSpec* bias_;
  int C_;
};

// out[B·T, N] = in[B·T, K] · weightᵀ + bias. With `tied_weight`, the weight is
// another module's parameter (GPT-2's lm_head uses the token embedding).
class Linear final : public Module {
 public:
  Linear(std::string name, int in_features, int out_features, bool bias, float init_std,
         ParamSpec* tied_weight = nullptr);
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;
  int in_features() const { return K_; }
  int out_features() const { return N_; }

  const void* in = nullptr;
  void* out = nullptr;
  void* din = nullptr;  // null: the input needs no gradient
  const void* dout = nullptr;

 private:
  ParamSpec* weight_;
  ParamSpec* bias_ = nullptr;
  int K_, N_;
};

class Gelu final : public Module {
 public:
  Gelu(std::string name, int width) : Module(std::move(name), "GELU"), width_(width) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  const void* in = nullptr;
  void* out = nullptr;
  void* din = nullptr;
  const void* dout = nullptr;

 private:
  int width_;
};

// Causal multi-head attention over a packed qkv [B,T,3C].
class AttentionCore final : public Module {
 public:
  AttentionCore(std::string name, int C, int n_head)
      : Module(std::move(name), "AttentionCore"), C_(C), NH_(n_head) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  const void* qkv = nullptr;
  void* out = nullptr;
  void* saved = nullptr;
  void* dqkv = nullptr;
  const void* dout = nullptr;

 private:
  int C_, NH_;
};

// Mean token cross-entropy over the first V of Vp logits. Backward writes
// dlogits in place over the logits, scaled by ctx.dloss().
class CrossEntropyLoss final : public Module {
 public:
  CrossEntropyLoss(std::string name, int V, int Vp)
      : Module(std::move(name), "CrossEntropyLoss"), V_(V), Vp_(Vp) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  void* logits = nullptr;   // overwritten by dlogits in backward
  float* losses = nullptr;  // [B·T] fp32
  float* lse = nullptr;     // [B·T] fp32

 private:
  int V_, Vp_;
};

}  // namespace hybrid::engine
