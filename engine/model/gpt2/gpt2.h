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

#include "engine/memory/layout_buffers.h"
#include "engine/model/causal_lm.h"
#include "engine/model/layers.h"

namespace hybrid::engine {

// GPT-2's activations (gpt2_layout.cpp; CausalLM::activation_layout).
// Tensor parallelism cuts the attention, MLP and logits by tensor_parts
// (attention_saved_bytes is then the backend's for n_embd/tensor_parts channels
// and n_head/tensor_parts heads).
MemoryLayout gpt2_activation_layout(const ModelConfig& m, int padded_vocab, int B, int T,
                                    kernels::DType dt, uint64_t attention_saved_bytes,
                                    const CheckpointPlan& plan = {},
                                    const ActivationStage& stage = {}, int tensor_parts = 1);
// The host memory of activations: the inputs of checkpointed blocks when the plan
// keeps them there (cpu_checkpointing); empty otherwise.
MemoryLayout gpt2_host_activation_layout(const ModelConfig& m, int B, int T, kernels::DType dt,
                                         const CheckpointPlan& plan);

// Sets every module's activation_bytes (children included) from the entries it owns.
void assign_activation_bytes(Module& root, const MemoryLayout& layout);

class Block final : public DecoderBlock {
 public:
  Block(std::string name, int C, int n_head, int n_layer, TensorSlice tp = {});
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  // The forward up to what backward reads: mlp.c_proj and the second residual
  // add (the block's output) are left out.
  void recompute(ExecutionContext& ctx) override;
  uint64_t forward_flops(int B, int T) const override;
  uint64_t backward_flops(int B, int T) const override;
  uint64_t recompute_flops(int B, int T) const override;
  std::vector<const Module*> recompute_order() const override;

  LayerNorm* ln_1;
  Module* attn;
  Linear* c_attn;
  AttentionCore* core;
  Linear* attn_proj;
  LayerNorm* ln_2;
  Module* mlp;
  Linear* c_fc;
  Gelu* gelu;
  Linear* mlp_proj;

  // Residual stream: residual_in → residual_mid (after attention) → residual_out.
  void* residual_mid = nullptr;
  void* residual_out = nullptr;
  void* branch_out = nullptr;  // scratch for c_proj outputs
  void* dresidual = nullptr;   // one gradient buffer for the whole residual stream
  std::vector<std::pair<void*, size_t>> grad_scratch;  // zeroed at the start of backward

 private:
  int C_;
};

class GPT2 final : public CausalLM {
 public:
  // tp: this rank's slice of a tensor-parallel group (Megatron's split; the
  // ParamSpecs hold this rank's pieces and how they sit in the whole tensors).
  GPT2(const ModelConfig& cfg, int padded_vocab, TensorSlice tp = {});
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;

  const ModelConfig& config() const override { return cfg_; }
  int padded_vocab() const override { return Vp_; }
  const Module& embedding_module() const override { return *embedding; }
  int num_blocks() const override { return int(blocks.size()); }
  const DecoderBlock& block(int layer) const override { return *blocks.at(size_t(layer)); }
  std::vector<const Module*> head_modules() const override { return {ln_f, lm_head}; }
  const ParamSpec* tied_parameter() const override { return embedding->wte(); }
  MemoryLayout activation_layout(int B, int T, kernels::DType dt, uint64_t attention_saved_bytes,
                                 const CheckpointPlan& plan, const ActivationStage& stage,
                                 int tensor_parts) const override;
  MemoryLayout host_activation_layout(int B, int T, kernels::DType dt,
                                      const CheckpointPlan& plan) const override;

  void bind(TrackingAllocator& alloc, int B, int T, kernels::DType dt,
            const CheckpointPlan& plan = {}, TrackingAllocator* host = nullptr,
            int slots = 1) override;
  void use_slot(int slot) override;
  int slots() const override { return int(slots_.size()); }
  int bound_B() const override { return B_; }
  int bound_T() const override { return T_; }
  int32_t* tokens_buffer() const override { return tokens_; }
  int32_t* targets_buffer() const override { return targets_; }
  const float* losses() const override { return ce_->losses; }

  // Pipeline parallelism (CausalLM). The last stage keeps the tied wte.
  // set_stage: blocks [begin, end), the embedding when first, the head when last.
  void set_stage(int begin, int end, bool first, bool last);
  void set_pipeline_stage(int stage, int stages, const std::string& method) override;
  std::vector<StageBlocks> partition_stages(int stages, const std::string& method) const override;
  bool first_stage() const override { return first_; }
  bool last_stage() const override { return last_; }
  int stage_begin() const override { return stage_begin_; }
  int stage_end() const override { return stage_end_; }
  void* stage_input() const override;
  const void* stage_output() const override;
  void* residual_grad() const override;
  size_t stream_bytes() const override;

  void set_tensor_slice(TensorSlice tp) override;
  TensorSlice tensor_slice() const override { return tp_; }

  const CheckpointPlan& checkpoint_plan() const override { return checkpoints_.plan(); }
  CheckpointTimes take_checkpoint_times() override { return checkpoints_.take_times(); }
  std::vector<const Module*> backward_order(const CheckpointPlan& plan) const override;

  std::vector<float> initial_parameters(const ModuleTree& tree, uint64_t seed) const override;
  // llm.c files and Hugging Face GPT2LMHeadModel directories.
  std::vector<float> read_weights(const std::string& path, const ModuleTree& tree) const override;
  void write_weights(const ModuleTree& tree, const std::vector<float>& flat,
                     const WeightFiles& out) const override;

  Embedding* embedding;
  std::vector<Block*> blocks;
  LayerNorm* ln_f;
  Linear* lm_head;
  CrossEntropyLoss* ce_;

 private:
  ModelConfig cfg_;
  int Vp_;
  TensorSlice tp_;
  int B_ = 0, T_ = 0;
  kernels::DType dt_ = kernels::DType::f32;
  struct Slot {
    LayoutBuffers activations;
    LayoutBuffers host_activations;
  };
  void build(TensorSlice tp);
  void wire();
  void wire_block(Block& b, int layer);
  const LayoutBuffers& acts() const { return slots_[size_t(slot_)].activations; }

  std::vector<Slot> slots_;
  int slot_ = 0;
  int stage_begin_ = 0, stage_end_ = -1;  // -1: every block
  bool first_ = true, last_ = true;
  CheckpointRunner checkpoints_;
  int32_t* tokens_ = nullptr;
  int32_t* targets_ = nullptr;
  std::vector<std::pair<void*, size_t>> grad_scratch_;  // zeroed at the start of backward
};

// Mapping between the engine's flat parameters and llm.c's checkpoint layout
// (engine/data/llmc_checkpoint.h).
struct Gpt2Weights;
void gpt2_from_llmc(const GPT2& model, const ModuleTree& tree, const Gpt2Weights& w,
                    std::vector<float>& flat);
void gpt2_to_llmc(const GPT2& model, const ModuleTree& tree, const std::vector<float>& flat,
                  Gpt2Weights& w);

}  // namespace hybrid::engine
