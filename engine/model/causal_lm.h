// A decoder-only causal language model as the rest of hybrid sees it: the
// engine, the memory and cost models, the tuner, the FLOPs profiler and the
// checkpoint tools hold a CausalLM and never a family's class. A model is a
// module tree: an embedding, a stack of DecoderBlocks that pass a residual
// stream [B, T, C] along, and a head (final norm, output projection, loss).
// The stack is what pipeline stages split, what activation checkpointing
// recomputes and what tensor parallelism cuts; a family (engine/model/<family>/)
// supplies its modules, its activation layout and its weight formats, and
// engine/model/registry.cpp is the one place that names the families.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/activation_checkpointing.h"
#include "engine/model/module.h"
#include "engine/parallel/pipeline_schedule.h"

namespace hybrid::engine {

// A pipeline stage's share of the model: blocks [begin, end) (end -1: to the
// last), the embedding when first, the head and the loss when last.
struct ActivationStage {
  int begin = 0, end = -1;
  bool first = true, last = true;
};

// One block of the stack. The model wires these fields; the checkpoint runner
// reads them to keep a checkpointed block's input and run it again.
class DecoderBlock : public Module {
 public:
  using Module::Module;
  // The module boundaries ctx.recompute(block) crosses, in order, itself first.
  virtual std::vector<const Module*> recompute_order() const = 0;

  const void* residual_in = nullptr;  // the block's input, [B, T, C]
  size_t stream_bytes = 0;            // bytes of one [B, T, C] tensor
  // Activation checkpointing: keeps only residual_in; host_input is its host
  // copy and input_slot its device slot when it waits in host memory.
  bool checkpointed = false;
  void* host_input = nullptr;
  void* input_slot = nullptr;
};

// Where write_weights puts the whole model (empty: not that format).
struct WeightFiles {
  std::string llmc_file;  // llm.c's checkpoint format (the families that have one)
  std::string hf_dir;     // a Hugging Face directory: config.json + *.safetensors
};

class CausalLM : public Module {
 public:
  using Module::Module;

  virtual const ModelConfig& config() const = 0;
  virtual int padded_vocab() const = 0;

  // ---- structure: what the cost models and the tuner walk ----------------------
  virtual const Module& embedding_module() const = 0;
  virtual int num_blocks() const = 0;
  virtual const DecoderBlock& block(int layer) const = 0;
  // The head's modules after the last block, the loss excluded (final norm,
  // output projection).
  virtual std::vector<const Module*> head_modules() const = 0;
  // The parameter the output projection shares with the embedding (tied
  // embeddings), null when untied: pipeline stages reduce its gradient together.
  virtual const ParamSpec* tied_parameter() const = 0;
  // The whole model's parameters that multiply activations (every projection's
  // weight, a tied one once; not a lookup table nor a norm's scale): the N of
  // the closed-form training FLOPs per token, 6·N + 6·L·C·T
  // (profiler::flops::decoder_step_closed_form).
  virtual int64_t matmul_params() const = 0;
  // Every activation buffer of one micro-batch [B, T] in allocation order: what
  // bind allocates, Module::activation_bytes sums by owner and the memory model
  // predicts. attention_saved_bytes: the backend's per-layer attention state
  // for a tensor-parallel rank's heads.
  virtual MemoryLayout activation_layout(int B, int T, kernels::DType dt,
                                         uint64_t attention_saved_bytes, const CheckpointPlan& plan,
                                         const ActivationStage& stage, int tensor_parts) const = 0;
  // Block inputs the plan keeps in host memory (cpu_checkpointing).
  virtual MemoryLayout host_activation_layout(int B, int T, kernels::DType dt,
                                              const CheckpointPlan& plan) const = 0;

  // ---- activations --------------------------------------------------------------
  // Allocates activations for micro-batch [B, T] and wires every module. A plan
  // that keeps block inputs in host memory needs the host allocator. `slots`
  // sets of activations hold that many micro-batches at once (a pipeline
  // stage's in-flight ones); slot 0 is wired.
  virtual void bind(TrackingAllocator& alloc, int B, int T, kernels::DType dt,
                    const CheckpointPlan& plan = {}, TrackingAllocator* host = nullptr,
                    int slots = 1) = 0;
  virtual void use_slot(int slot) = 0;  // wires every module to activation set `slot`
  virtual int slots() const = 0;
  virtual int bound_B() const = 0;
  virtual int bound_T() const = 0;
  virtual int32_t* tokens_buffer() const = 0;   // [B·T] device, filled by the engine
  virtual int32_t* targets_buffer() const = 0;  // [B·T] device
  // [B·T] device: each token's position in its document, for micro-batches
  // that pack several documents into a row (ExecutionContext::positions).
  virtual int32_t* positions_buffer() const = 0;
  virtual const float* losses() const = 0;  // [B·T] after forward (device; last stage)

  // ---- pipeline stages ------------------------------------------------------------
  // This rank runs stage `stage` of `stages`, the blocks partitioned by
  // pipeline.partition `method`. Before the ModuleTree: the other stages'
  // parameters get no room (ParamSpec::numel 0). A stage that is not first
  // finds its input in stage_input(); one that is not last leaves its output in
  // stage_output() and finds that output's gradient in residual_grad() before
  // backward, which leaves the gradient of its input there.
  virtual void set_pipeline_stage(int stage, int stages, const std::string& method) = 0;
  virtual std::vector<StageBlocks> partition_stages(int stages,
                                                    const std::string& method) const = 0;
  virtual bool first_stage() const = 0;
  virtual bool last_stage() const = 0;
  virtual int stage_begin() const = 0;
  virtual int stage_end() const = 0;
  virtual void* stage_input() const = 0;
  virtual const void* stage_output() const = 0;
  virtual void* residual_grad() const = 0;
  virtual size_t stream_bytes() const = 0;  // one [B, T, C] tensor of the residual stream

  // ---- tensor parallelism ---------------------------------------------------------
  // Rebuilds every module cut for tp (before the ModuleTree and bind): the
  // engine learns its tensor-parallel rank after the model exists.
  virtual void set_tensor_slice(TensorSlice tp) = 0;
  virtual TensorSlice tensor_slice() const = 0;

  // ---- activation checkpointing ---------------------------------------------------
  virtual const CheckpointPlan& checkpoint_plan() const = 0;
  virtual CheckpointTimes take_checkpoint_times() = 0;
  // The modules a backward pass enters, in order, recomputed forwards included:
  // the order ZeRO-3's gatherer sees (the memory model replays it).
  virtual std::vector<const Module*> backward_order(const CheckpointPlan& plan) const = 0;

  // ---- generation ---------------------------------------------------------------------
  // The key/value cache of `batch` sequences of up to `max_tokens` tokens, as
  // elements of `dt`: per block of this stage, its keys then its values, each
  // [batch, kv heads of this tensor-parallel rank, max_tokens, head size] (a
  // head's positions contiguous: attention over the cache reads them in place).
  // Category `other` until the generation path gives the cache its own.
  virtual MemoryLayout kv_cache_layout(int batch, int max_tokens, kernels::DType dt) const = 0;
  // Wires every block's attention to its entries of `cache` (that layout,
  // allocated); a forward under ExecutionContext::decoding reads and appends
  // there. Null unwires.
  virtual void wire_kv_cache(const LayoutBuffers* cache) = 0;
  // After a generating forward over B rows: each row's last logits, [B, Vp /
  // tensor parts] in the compute dtype (device).
  virtual const void* generated_logits() const = 0;

  // ---- weights --------------------------------------------------------------------
  // Host-side initial values of every parameter (fp32, flat order), seeded.
  // Tensor parallel: the whole model's, tree.full_param_count() of them.
  virtual std::vector<float> initial_parameters(const ModuleTree& tree, uint64_t seed) const = 0;
  // The whole model's weights (tree.full_param_count() floats, padded
  // vocabulary rows 0) from a file or directory in one of the family's formats
  // (hybrid.init_from); a weight that does not fit this model is an error
  // naming it.
  virtual std::vector<float> read_weights(const std::string& path,
                                          const ModuleTree& tree) const = 0;
  // The whole model's weights into the formats `out` names; a format the
  // family has not is an error naming both.
  virtual void write_weights(const ModuleTree& tree, const std::vector<float>& flat,
                             const WeightFiles& out) const = 0;
  // Why write_weights would refuse `out` (a format the family has not), naming
  // the path and the family; "" when it writes it. Runs check it before training.
  virtual std::string cannot_write(const WeightFiles& out) const = 0;
  // Where a full checkpoint under `root` keeps the consolidated weights: the
  // family's own format (llm.c's file for GPT-2, a Hugging Face directory for
  // families without one).
  virtual WeightFiles full_checkpoint_files(const std::string& root) const = 0;
};

}  // namespace hybrid::engine
