// What every decoder-only family shares, written once: activation slots,
// pipeline stages, tensor-parallel rebuilding, activation checkpointing, the
// forward and backward walk (embedding → blocks → head → loss) and seeded
// initialisation, and the ends' wiring (embedding, final norm, head). A family
// derives from DecoderStack, builds its modules (build), lays out its blocks'
// activations (shared_activations, block_activations), wires them (its block's
// PreNormBlock::wire) and reads and writes its weight formats.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/memory/layout_buffers.h"
#include "engine/model/causal_lm.h"
#include "engine/model/layers.h"
#include "engine/model/pre_norm_block.h"

namespace hybrid::engine {

class DecoderStack : public CausalLM {
 public:
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;
  int own_launches() const override { return 4; }  // tokens and targets in, two gradients zeroed

  const ModelConfig& config() const override { return cfg_; }
  int padded_vocab() const override { return Vp_; }
  const Module& embedding_module() const override { return *embedding; }
  int num_blocks() const override { return int(blocks_.size()); }
  const DecoderBlock& block(int layer) const override { return *blocks_.at(size_t(layer)); }
  std::vector<const Module*> head_modules() const override { return {final_norm_, lm_head}; }
  const ParamSpec* tied_parameter() const override { return tied_; }
  int64_t matmul_params() const override;

  void bind(TrackingAllocator& alloc, int B, int T, kernels::DType dt,
            const CheckpointPlan& plan = {}, TrackingAllocator* host = nullptr,
            int slots = 1) override;
  void use_slot(int slot) override;
  int slots() const override { return int(slots_.size()); }
  int bound_B() const override { return B_; }
  int bound_T() const override { return T_; }
  int32_t* tokens_buffer() const override { return tokens_; }
  int32_t* targets_buffer() const override { return targets_; }
  int32_t* positions_buffer() const override { return positions_; }
  const float* losses() const override { return loss_->losses; }

  // Blocks [begin, end), the embedding when first, the head when last; the
  // last stage keeps a tied parameter.
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

  // The modules every family has (set by build()).
  Embedding* embedding = nullptr;
  Linear* lm_head = nullptr;

  void set_tensor_slice(TensorSlice tp) override;
  TensorSlice tensor_slice() const override { return tp_; }

  // The activations every family shares (inputs, the residual stream between
  // blocks or the device slots of inputs kept in host memory, the checkpointed
  // blocks' scratch, the final norm, the head's projection and the loss) around
  // the family's own (shared_activations, block_activations).
  MemoryLayout activation_layout(int B, int T, kernels::DType dt, uint64_t attention_saved_bytes,
                                 const CheckpointPlan& plan, const ActivationStage& stage,
                                 int tensor_parts) const final;
  // The inputs of checkpointed blocks when the plan keeps them in host memory.
  MemoryLayout host_activation_layout(int B, int T, kernels::DType dt,
                                      const CheckpointPlan& plan) const final;

  const CheckpointPlan& checkpoint_plan() const override { return checkpoints_.plan(); }
  CheckpointTimes take_checkpoint_times() override { return checkpoints_.take_times(); }
  std::vector<const Module*> backward_order(const CheckpointPlan& plan) const override;

  MemoryLayout kv_cache_layout(int batch, int max_tokens, kernels::DType dt) const override;
  void wire_kv_cache(const LayoutBuffers* cache) override;
  const void* generated_logits() const override;

  // Seeded per parameter (layout- and world-size-independent); the token
  // embedding's padded vocabulary rows stay 0.
  std::vector<float> initial_parameters(const ModuleTree& tree, uint64_t seed) const override;

 protected:
  DecoderStack(std::string type, const ModelConfig& cfg, int padded_vocab);

  // Adds every module cut for `tp` (the children are cleared first) and sets
  // the stack's pointers below; refuses a slice the shapes do not split into.
  virtual void build(TensorSlice tp) = 0;
  // Sizes of one micro-batch's activations: N = B·T tokens, C the width, d the
  // element size, tp the tensor-parallel parts, the backend's attention state.
  struct ActivationSizes {
    uint64_t N, C, d, tp, attention_saved;
  };
  // Adds a layout entry: name, elements, element size, and the module that
  // keeps it for backward ("" when shared).
  using AddActivation = std::function<void(std::string, uint64_t, uint64_t, std::string)>;
  // The family's gradient and scratch buffers that every block shares.
  virtual void shared_activations(const ActivationSizes& s, const AddActivation& add) const = 0;
  // What one block keeps for backward, its entries named h + suffix; owned by
  // owner_prefix + suffix, or by none when owner_prefix is empty (the
  // checkpointed blocks' shared set).
  virtual void block_activations(const std::string& h, const std::string& owner_prefix,
                                 const ActivationSizes& s, const AddActivation& add) const = 0;

  const LayoutBuffers& acts() const { return slots_[size_t(slot_)].activations; }
  const CheckpointPlan& plan() const { return checkpoints_.plan(); }
  int B() const { return B_; }
  int T() const { return T_; }

  ModelConfig cfg_;
  int Vp_;
  TensorSlice tp_;
  // Set by build().
  ParamSpec* token_embedding_ = nullptr;  // [Vp, C]; rows past the vocabulary stay 0
  std::vector<PreNormBlock*> blocks_;
  Norm* final_norm_ = nullptr;
  CrossEntropyLoss* loss_ = nullptr;
  ParamSpec* tied_ = nullptr;  // the lm_head weight the embedding owns; null when untied

 private:
  struct Slot {
    LayoutBuffers activations;
    LayoutBuffers host_activations;
  };
  void wire();
  // The final norm's output, statistics and gradient buffer, named after it.
  void head_norm_activations(const ActivationSizes& s, const AddActivation& add) const;
  // Wires the embedding (first stage) and the final norm and head (last
  // stage): the entries of block_input_entry(plan, 0) and (plan, n_layer) hold
  // their output and input.
  void wire_ends(const LayoutBuffers& a);
  // Wires lm_head (its input `in` and that input's gradient `din`) and the loss.
  void wire_head(const LayoutBuffers& a, const void* in, void* din);
  void wire_block(PreNormBlock& b, int layer);
  // A generating forward: the embedding, the blocks over the cache, and the
  // head on each row's last token only (no loss).
  void forward_generating(ExecutionContext& ctx);
  int end_block() const { return stage_end_ < 0 ? cfg_.n_layer : stage_end_; }

  int B_ = 0, T_ = 0;
  kernels::DType dt_ = kernels::DType::f32;
  std::vector<Slot> slots_;
  int slot_ = 0;
  int stage_begin_ = 0, stage_end_ = -1;  // -1: every block
  bool first_ = true, last_ = true;
  CheckpointRunner checkpoints_;
  std::vector<std::pair<void*, size_t>> head_grad_scratch_;  // zeroed before backward
  int32_t* tokens_ = nullptr;
  int32_t* targets_ = nullptr;
  int32_t* positions_ = nullptr;
};

// Sets every module's activation_bytes (children included) from the entries it owns.
void assign_activation_bytes(Module& root, const MemoryLayout& layout);

}  // namespace hybrid::engine
