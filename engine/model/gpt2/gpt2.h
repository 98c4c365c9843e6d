// GPT-2 built from modules: embedding → n_layer blocks (ln_1, attn{c_attn, core,
// c_proj}, ln_2, mlp{c_fc, gelu, c_proj}, two residual adds) → ln_f → lm_head
// (tied to the token embedding) → loss. Shapes and initialisation as GPT-2
// (normal 0.02; residual projections 0.02/√(2·n_layer); layernorm 1/0; padded
// vocabulary rows 0).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/model/decoder_stack.h"
#include "engine/model/layers.h"
#include "engine/model/pre_norm_block.h"

namespace hybrid::engine {

class Block final : public PreNormBlock {
 public:
  Block(std::string name, int C, int n_head, int n_layer, TensorSlice tp = {});
  std::vector<const Module*> recompute_order() const override;
  void wire(const LayoutBuffers& a, const std::string& h, size_t tokens) override;

  LayerNorm* ln_1;
  Module* attn;
  Linear* c_attn;
  Linear* attn_proj;
  LayerNorm* ln_2;
  Module* mlp;
  Linear* c_fc;
  Gelu* gelu;
  Linear* mlp_proj;
};

class GPT2 final : public DecoderStack {
 public:
  // tp: this rank's slice of a tensor-parallel group (Megatron's split; the
  // ParamSpecs hold this rank's pieces and how they sit in the whole tensors).
  GPT2(const ModelConfig& cfg, int padded_vocab, TensorSlice tp = {});

  // llm.c files and Hugging Face GPT2LMHeadModel directories.
  std::vector<float> read_weights(const std::string& path, const ModuleTree& tree) const override;
  void write_weights(const ModuleTree& tree, const std::vector<float>& flat,
                     const WeightFiles& out) const override;
  std::string cannot_write(const WeightFiles&) const override { return ""; }  // both formats
  WeightFiles full_checkpoint_files(const std::string& root) const override {
    return {root + "/model.bin", ""};
  }

  // The modules as GPT-2's (the stack's pointers, typed).
  std::vector<Block*> blocks;
  LayerNorm* ln_f;

 private:
  void build(TensorSlice tp) override;
  // gpt2_layout.cpp
  void shared_activations(const ActivationSizes& s, const AddActivation& add) const override;
  void block_activations(const std::string& h, const std::string& owner_prefix,
                         const ActivationSizes& s, const AddActivation& add) const override;
};

// Mapping between the engine's flat parameters and llm.c's checkpoint layout
// (engine/data/llmc_checkpoint.h).
struct Gpt2Weights;
void gpt2_from_llmc(const GPT2& model, const ModuleTree& tree, const Gpt2Weights& w,
                    std::vector<float>& flat);
void gpt2_to_llmc(const GPT2& model, const ModuleTree& tree, const std::vector<float>& flat,
                  Gpt2Weights& w);

}  // namespace hybrid::engine
