// Leaf modules the families build from: each wraps one backend op family. Their activation
// buffers are wired by the model when the micro-batch shape is known (bind), so
// forward/backward take only the context. Every gradient they write follows the
// ops' "+=" contract; the caller zeroes gradient buffers before a backward pass.
#pragma once

#include "engine/model/execution_context.h"
#include "engine/model/module.h"

namespace hybrid::engine {

// The buffers of a layer with one input and one output, wired by the model:
// forward reads in and writes out; backward reads dout and adds into din.
struct LayerIo {
  const void* in = nullptr;
  void* out = nullptr;
  void* din = nullptr;
  const void* dout = nullptr;
  void wire(const void* input, void* output, void* input_grad, const void* output_grad) {
    in = input, out = output, din = input_grad, dout = output_grad;
  }
};

// A normalisation over the channels (LayerNorm, RMSNorm) that saves fp32
// statistics per token for backward: stats_per_token() floats of each of the
// B·T tokens, in one buffer.
class Norm : public Module, public LayerIo {
 public:
  virtual int stats_per_token() const = 0;
  virtual void wire_stats(float* stats, size_t tokens) = 0;

 protected:
  using Module::Module;
};

// Token + position embedding: out = wte[tokens] + wpe[positions] (the
// context's, else 0..T-1 in every row); max_seq 0: no
// learned positions (wpe null; rotary families), out = wte[tokens]. Tensor parallel:
// each rank holds padded_vocab/parts rows of wte (a vocabulary shard); its
// tokens' rows, summed over the group, make the embedding.
class Embedding final : public Module {
 public:
  Embedding(std::string name, int padded_vocab, int max_seq, int C, TensorSlice tp = {});
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  ParamSpec* wte() const { return wte_; }
  ParamSpec* wpe() const { return wpe_; }
  TpAllReduces tp_all_reduces() const override { return {tp_.parts > 1 ? 1 : 0, 0}; }

  void* out = nullptr;
  const void* dout = nullptr;

 private:
  ParamSpec* wte_;
  ParamSpec* wpe_ = nullptr;
  int C_;
  TensorSlice tp_;
  int vocab_begin_ = 0, vocab_rows_ = 0;  // this rank's shard of wte
};

class LayerNorm final : public Norm {
 public:
  LayerNorm(std::string name, int C);
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;
  int stats_per_token() const override { return 2; }
  void wire_stats(float* stats, size_t tokens) override { mean = stats, rstd = stats + tokens; }

  float* mean = nullptr;
  float* rstd = nullptr;

 private:
  ParamSpec* weight_;
  ParamSpec* bias_;
  int C_;
};

// Tensor parallelism (Megatron): a column-parallel Linear holds a block of the
// output features (its input is whole on every rank, so the input's gradient is
// summed over the group in backward); a row-parallel one holds a block of the
// input features (its partial outputs are summed over the group in forward,
// the bias added once). Stacked matrices (`groups`: their output features;
// GPT-2's q, k, v; Llama's q, k, v heads and gate, up) are each cut alike.
struct LinearSplit {
  enum Mode { none, column, row } mode = none;
  TensorSlice tp;
  std::vector<int64_t> groups;  // empty: one matrix
};

// out[B·T, N] = in[B·T, K] · weightᵀ + bias. With `tied_weight`, the weight is
// another module's parameter (GPT-2's lm_head uses the token embedding).
class Linear final : public Module, public LayerIo {
 public:
  Linear(std::string name, int in_features, int out_features, bool bias, float init_std,
         ParamSpec* tied_weight = nullptr, LinearSplit split = {});
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;
  bool multiply_accumulates() const override { return true; }
  int in_features() const { return K_; }
  int out_features() const { return N_; }
  ParamSpec* weight() const { return weight_; }
  // Every column-parallel layer's input needs its gradient (din wired).
  TpAllReduces tp_all_reduces() const override {
    if (split_.tp.parts == 1) return {};
    return {split_.mode == LinearSplit::row ? 1 : 0, split_.mode == LinearSplit::column ? 1 : 0};
  }

  // din null: the input needs no gradient. Column-parallel: it must hold only
  // this layer's contribution (zero before backward), which is summed in place.

 private:
  ParamSpec* weight_;
  ParamSpec* bias_ = nullptr;
  int K_, N_;  // this rank's
  LinearSplit split_;
};

class Gelu final : public Module, public LayerIo {
 public:
  Gelu(std::string name, int width) : Module(std::move(name), "GELU"), width_(width) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

 private:
  int width_;
};

// RMSNorm (the Llama family): out = x·rstd·weight, rstd = 1/√(mean(x²) + eps)
// in fp32, saved [B·T] for backward.
class RMSNorm final : public Norm {
 public:
  RMSNorm(std::string name, int C, float eps);
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;
  int stats_per_token() const override { return 1; }
  void wire_stats(float* stats, size_t) override { rstd = stats; }

  float* rstd = nullptr;

 private:
  ParamSpec* weight_;
  int C_;
  float eps_;
};

// Rotary position embedding (rotate-half) of the query and key heads of a
// packed qkv [B, T, (n_head + 2·n_kv_head)·head_dim], in place: forward turns
// qkv after its projection, backward turns the gradient dqkv back before the
// projection's backward reads it. Positions are the context's (packed
// documents; a generating forward's, each row from its start in the cache),
// else 0..T-1 in every row.
class Rope final : public Module {
 public:
  Rope(std::string name, int n_head, int n_kv_head, int head_dim, float theta)
      : Module(std::move(name), "Rope"),
        heads_(n_head + n_kv_head),
        stride_((n_head + 2 * n_kv_head) * head_dim),
        head_dim_(head_dim),
        theta_(theta) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  void* qkv = nullptr;
  void* dqkv = nullptr;

 private:
  int heads_, stride_, head_dim_;
  float theta_;
};

// SwiGLU: gate_up [B·T, 2·width] (gate, then up) → out [B·T, width] =
// silu(gate)·up.
class SwiGlu final : public Module {
 public:
  SwiGlu(std::string name, int width) : Module(std::move(name), "SwiGLU"), width_(width) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  const void* gate_up = nullptr;
  void* out = nullptr;
  void* dgate_up = nullptr;
  const void* dout = nullptr;

 private:
  int width_;
};

// Causal attention over a packed qkv [B, T, C + 2·n_kv_head·C/n_head]: n_head
// query heads, n_kv_head key/value heads (n_head: multi-head, [B, T, 3C]).
class AttentionCore final : public Module {
 public:
  AttentionCore(std::string name, int C, int n_head, int n_kv_head = 0)
      : Module(std::move(name), "AttentionCore"),
        C_(C),
        NH_(n_head),
        NKV_(n_kv_head > 0 ? n_kv_head : n_head) {}
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;
  bool multiply_accumulates() const override { return true; }

  const void* qkv = nullptr;
  void* out = nullptr;
  void* saved = nullptr;
  void* dqkv = nullptr;
  const void* dout = nullptr;
  // Generation: this layer's key and value cache, [rows, NKV, max_tokens, hs]
  // each (DecoderStack::wire_kv_cache); a generating forward reads and appends.
  void* k_cache = nullptr;
  void* v_cache = nullptr;

 private:
  int C_, NH_, NKV_;
};

// Mean token cross-entropy over the first V of Vp logits. Backward writes
// dlogits in place over the logits, scaled by ctx.dloss(). Tensor parallel:
// this rank's logits are its vocabulary shard's Vp/parts columns; the shards'
// log-sum-exps and target logits, gathered over the group, give every rank
// the whole losses.
class CrossEntropyLoss final : public Module {
 public:
  CrossEntropyLoss(std::string name, int V, int Vp, TensorSlice tp = {});
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;

  void* logits = nullptr;   // overwritten by dlogits in backward
  float* losses = nullptr;  // [B·T] fp32
  float* lse = nullptr;     // [B·T] fp32
  // Tensor parallel: this shard's [2, B·T] statistics, then every shard's.
  float* shard_stats = nullptr;
  float* gathered_stats = nullptr;

 private:
  int V_, Vp_;
  TensorSlice tp_;
  int vocab_begin_ = 0, vocab_real_ = 0, vocab_rows_ = 0;  // this rank's shard
};

}  // namespace hybrid::engine
