// The pre-norm residual block GPT-2 and Llama share, written once:
//   mid = in + attention(norm_1(in)),  out = mid + mlp(norm_2(mid)).
// A family builds the four modules (GPT-2: LayerNorms, GELU MLP; Llama:
// RMSNorms, rotary GQA attention, SwiGLU MLP) and wires their buffers (wire);
// the forward, backward, recomputation and their FLOPs are this class's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/memory/layout_buffers.h"
#include "engine/model/causal_lm.h"
#include "engine/model/layers.h"

namespace hybrid::engine {

class PreNormBlock : public DecoderBlock {
 public:
  void forward(ExecutionContext& ctx) override;
  // The residual stream has one gradient buffer (grad.residual): the branches
  // read it as their output gradient and the norms add into it.
  void backward(ExecutionContext& ctx) override;
  // The forward up to what backward reads: the MLP's children past
  // recompute_children and the second residual add (the block's output) are
  // left out.
  void recompute(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;  // the two residual adds
  uint64_t backward_flops(int, int) const override { return 0; }
  uint64_t recompute_flops(int B, int T) const override;
  int own_launches() const override { return 2 + zeroed_buffers_; }  // residual adds, zeroing

  // Wires the family's modules (residual_in set): their entries in the layout
  // named h + suffix (h: the block's name, or "recompute" when checkpointed),
  // the gradient buffers the blocks share, residual_mid and grad_scratch;
  // tokens = B·T.
  virtual void wire(const LayoutBuffers& a, const std::string& h, size_t tokens) = 0;

  // Residual stream: residual_in → residual_mid (after attention) → residual_out.
  void* residual_mid = nullptr;
  void* residual_out = nullptr;
  void* branch_out = nullptr;  // the attention's and the MLP's output projections write here
  std::vector<std::pair<void*, size_t>> grad_scratch;  // zeroed at the start of backward
  // The attention's core (set by the family): where generation wires the cache.
  AttentionCore* core = nullptr;

 protected:
  // C: the residual stream's width; zeroed_buffers: the gradient buffers the
  // family zeroes before backward (grad_scratch's size once wired).
  PreNormBlock(std::string name, std::string type, int C, int zeroed_buffers)
      : DecoderBlock(std::move(name), std::move(type)), C_(C), zeroed_buffers_(zeroed_buffers) {}
  // Set by the family's constructor.
  Module* norm_1_ = nullptr;
  Module* attention_ = nullptr;
  Module* norm_2_ = nullptr;
  Module* mlp_ = nullptr;

 private:
  int C_, zeroed_buffers_;
};

// The entries' buffers and sizes (the gradient buffers to zero before backward).
std::vector<std::pair<void*, size_t>> entry_buffers(const LayoutBuffers& a,
                                                    const std::vector<std::string>& names);

}  // namespace hybrid::engine
