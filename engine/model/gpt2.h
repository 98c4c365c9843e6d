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

#include "engine/config/config.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/activation_checkpointing.h"
#include "engine/model/layers.h"
#include "engine/parallel/pipeline_schedule.h"

namespace hybrid::engine {

// Every activation buffer of one micro-batch [B, T] (engine/model/gpt2_layout.cpp),
// in allocation order: what GPT2::bind allocates and wires, what
// Module::activation_bytes sums by owner and what the memory model predicts.
// Checkpointed blocks (plan) keep only their input; their internals share one
// scratch set, recomputed in backward.
// A pipeline stage's share: blocks [begin, end) (end -1: to the last), the
// embedding when first, ln_f, lm_head and the loss when last.
struct ActivationStage {
  int begin = 0, end = -1;
  bool first = true, last = true;
};
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

class Block final : public Module {
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
  // The module boundaries ctx.recompute(block) crosses, in order, itself first.
  std::vector<const Module*> recompute_order() const;
  size_t stream_bytes() const { return stream_bytes_; }  // one [B, T, C] tensor

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
  const void* residual_in = nullptr;
  void* residual_mid = nullptr;
  void* residual_out = nullptr;
  void* branch_out = nullptr;  // scratch for c_proj outputs
  void* dresidual = nullptr;   // one gradient buffer for the whole residual stream
  std::vector<std::pair<void*, size_t>> grad_scratch;  // zeroed at the start of backward

  // Activation checkpointing: keeps only residual_in; host_input is its host
  // copy and input_slot its device slot when it waits in host memory.
  bool checkpointed = false;
  void* host_input = nullptr;
  void* input_slot = nullptr;

 private:
  friend class GPT2;
  int C_;
  size_t stream_bytes_ = 0;
};

class GPT2 final : public Module {
 public:
  // tp: this rank's slice of a tensor-parallel group (Megatron's split; the
  // ParamSpecs hold this rank's pieces and how they sit in the whole tensors).
  GPT2(const ModelConfig& cfg, int padded_vocab, TensorSlice tp = {});
  void forward(ExecutionContext& ctx) override;
  void backward(ExecutionContext& ctx) override;

  // Allocates activations for micro-batch [B,T] (gpt2_activation_layout) and
  // wires every module. A plan that keeps block inputs in host memory needs
  // the host allocator. `slots` sets of activations hold that many
  // micro-batches at once (a pipeline stage's in-flight ones); slot 0 is wired.
  void bind(TrackingAllocator& alloc, int B, int T, kernels::DType dt,
            const CheckpointPlan& plan = {}, TrackingAllocator* host = nullptr, int slots = 1);
  // Wires every module to activation set `slot` (0 ≤ slot < slots()).
  void use_slot(int slot);
  int slots() const { return int(slots_.size()); }

  // Pipeline parallelism: this rank runs blocks [begin, end), the embedding
  // when it is the first stage and ln_f, lm_head and the loss when it is the
  // last. A stage that is not first finds its input in stage_input(); one that
  // is not last leaves its output in stage_output() and finds that output's
  // gradient in residual_grad() before backward, which leaves the gradient of
  // its input there. Default: the whole model. Before the ModuleTree: the
  // other stages' parameters get no room (ParamSpec::numel 0; the last stage
  // keeps the tied wte), and bind lays out only the stage's activations.
  void set_stage(int begin, int end, bool first, bool last);
  // set_stage for stage `stage` of `stages`, the blocks partitioned by
  // pipeline.partition `method` (partition_stages).
  void set_pipeline_stage(int stage, int stages, const std::string& method);
  // Rebuilds every module cut for tp (before the ModuleTree is made and before
  // bind): the engine learns its tensor-parallel rank after the model exists.
  void set_tensor_slice(TensorSlice tp);
  TensorSlice tensor_slice() const { return tp_; }
  // The blocks of each of `stages` stages by pipeline.partition `method`
  // (partition_blocks with this model's parameter counts).
  std::vector<StageBlocks> partition_stages(int stages, const std::string& method) const;
  bool first_stage() const { return first_; }
  bool last_stage() const { return last_; }
  int stage_begin() const { return stage_begin_; }
  int stage_end() const { return stage_end_; }
  void* stage_input() const;
  const void* stage_output() const;
  void* residual_grad() const;
  size_t stream_bytes() const;  // one [B, T, C] tensor of the residual stream
  const CheckpointPlan& checkpoint_plan() const { return checkpoints_.plan(); }
  // Forward/recompute/backward time of the checkpointed blocks (plan.profile).
  CheckpointTimes take_checkpoint_times() { return checkpoints_.take_times(); }
  // The modules a backward pass enters, in order, recomputed forwards included:
  // the order ZeRO-3's gatherer sees (the memory model replays it).
  std::vector<const Module*> backward_order(const CheckpointPlan& plan) const;
  int bound_B() const { return B_; }
  int bound_T() const { return T_; }

  const ModelConfig& config() const { return cfg_; }
  int padded_vocab() const { return Vp_; }
  const float* losses() const { return ce_->losses; }  // [B·T] after forward (device; last stage)
  int32_t* tokens_buffer() const { return tokens_; }   // [B·T] device, filled by the engine
  int32_t* targets_buffer() const { return targets_; }

  Embedding* embedding;
  std::vector<Block*> blocks;
  LayerNorm* ln_f;
  Linear* lm_head;
  CrossEntropyLoss* ce_;

  // Host-side initial values of every parameter (fp32, flat order), seeded.
  // Tensor parallel: the whole (unsharded) model's, tree.full_param_count() of
  // them, so that a run starts alike under every layout.
  std::vector<float> initial_parameters(const ModuleTree& tree, uint64_t seed) const;

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
