// The Llama family (Hugging Face LlamaForCausalLM; Llama 2/3, and the Mistral-
// and Qwen-style configs that keep its structure): embedding (tokens only) →
// n_layer blocks (input_layernorm, self_attn{qkv_proj, rope, core, o_proj},
// post_attention_layernorm, mlp{gate_up_proj, act, down_proj}, two residual
// adds) → norm → lm_head (tied to the embedding or its own) → loss. RMSNorm,
// rotary positions, grouped-query attention (n_kv_head key/value heads), the
// SwiGLU MLP of intermediate_size, no biases. HF's q, k, v projections are one
// qkv_proj here (q, k, v rows stacked, the layout AttentionCore reads) and its
// gate and up projections one gate_up_proj; llama_hf.cpp maps the names.
// Initialisation as HF: normal(0.02) for every matrix, norms 1.
#pragma once

#include <string>
#include <vector>

#include "engine/model/decoder_stack.h"
#include "engine/model/layers.h"
#include "engine/model/pre_norm_block.h"

namespace hybrid::engine {

class LlamaBlock final : public PreNormBlock {
 public:
  LlamaBlock(std::string name, const ModelConfig& m, TensorSlice tp);
  std::vector<const Module*> recompute_order() const override;
  void wire(const LayoutBuffers& a, const std::string& h, size_t tokens) override;

  RMSNorm* input_layernorm;
  Module* self_attn;
  Linear* qkv_proj;
  Rope* rope;
  Linear* o_proj;
  RMSNorm* post_attention_layernorm;
  Module* mlp;
  Linear* gate_up_proj;
  SwiGlu* act;
  Linear* down_proj;
};

class Llama final : public DecoderStack {
 public:
  // tp: this rank's slice (Megatron's split: heads and key/value heads, the MLP's
  // inner width and the vocabulary).
  Llama(const ModelConfig& cfg, int padded_vocab, TensorSlice tp = {});

  // Hugging Face LlamaForCausalLM directories (the family has no llm.c format).
  std::vector<float> read_weights(const std::string& path, const ModuleTree& tree) const override;
  void write_weights(const ModuleTree& tree, const std::vector<float>& flat,
                     const WeightFiles& out) const override;
  std::string cannot_write(const WeightFiles& out) const override;
  WeightFiles full_checkpoint_files(const std::string& root) const override;

  // The MLP's inner width (hybrid.model.intermediate_size, or its default).
  int intermediate() const { return intermediate_; }

  std::vector<LlamaBlock*> blocks;
  RMSNorm* norm;

 private:
  void build(TensorSlice tp) override;
  // llama_layout.cpp
  void shared_activations(const ActivationSizes& s, const AddActivation& add) const override;
  void block_activations(const std::string& h, const std::string& owner_prefix,
                         const ActivationSizes& s, const AddActivation& add) const override;

  int intermediate_;
};

}  // namespace hybrid::engine
