// The Engine API, shaped like DeepSpeed's:
//
//   auto engine = hybrid::initialize(config, hybrid::make_model(config));
//   for (...) {
//     float loss = engine->forward(inputs, targets);  // one micro-batch
//     engine->backward();
//     engine->step();   // optimizer step at the accumulation boundary
//   }
//   engine->save_checkpoint(dir, tag);  engine->load_checkpoint(dir, tag);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_owner.h"
#include "engine/comm/communicator.h"
#include "engine/config/config.h"
#include "engine/generate/generator.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/causal_lm.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "engine/precision/loss_scaler.h"
#include "engine/runtime/checkpoint_io.h"
#include "engine/runtime/device_runtime.h"
#include "engine/runtime/micro_batch.h"
#include "engine/runtime/pipeline_runner.h"
#include "engine/step_timers.h"
#include "engine/zero/zero_runtime.h"
#include "profiler/comm_tracer.h"
#include "profiler/tracer.h"

namespace hybrid {

using engine::Config;

struct StepStats {
  int64_t step = 0;      // global step just completed (1-based)
  bool skipped = false;  // fp16 overflow (or non-finite gradients): no update
  float lr = 0.0f;
  float loss_scale = 1.0f;  // the scale this step's gradients were computed with
  float grad_norm = 0.0f;   // unscaled global norm before clipping (0 when skipped)
};

using engine::CheckpointSaveOptions;  // engine/runtime/checkpoint_io.h

struct EngineOptions {
  // Defaults: the config's device; MPI when launched with several ranks.
  std::unique_ptr<kernels::Backend> backend;
  // The host communicator: small collectives on host values (loss average,
  // run id, norm/overflow agreement, checkpoint flags, barriers).
  std::unique_ptr<engine::comm::Communicator> communicator;
  // The device communicator for gradients and parameters. Default: NCCL
  // (bootstrapped over the host one) when the backend is CUDA, otherwise the
  // host communicator itself.
  std::unique_ptr<engine::comm::Communicator> device_communicator;
  std::unique_ptr<engine::Optimizer> optimizer;  // a client optimizer, as DeepSpeed accepts
  bool quiet = false;                            // no informational lines on stdout
};

// The Engine composes its rooms (docs/design.md draws them): the device
// runtime (backend, memory, communicators and groups, tracers, NVTX/CUPTI), the
// pipeline runner (this stage's schedule and transfers, with pipeline stages)
// and checkpoint I/O (checkpoints and the whole model's weights); it owns the
// model, ZeRO, the optimizer, the loss scaler and the LR schedule itself, and
// runs the step: micro_forward / micro_backward, then take_optimizer_step.
class InferenceReplica;  // engine/inference_replica.h

class Engine {
 public:
  Engine(const Config& cfg, std::unique_ptr<engine::CausalLM> model, EngineOptions opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One micro-batch: inputs and targets are host arrays of [micro_batch, T], T the
  // training sequence length (config.seq_len(), at most the model's block size);
  // positions (packed documents) as engine::MicroBatch's. Returns this rank's
  // mean token loss of the micro-batch (over its real targets).
  float forward(const int32_t* inputs, const int32_t* targets, const int32_t* positions = nullptr);
  float forward(const std::vector<int32_t>& inputs, const std::vector<int32_t>& targets) {
    return forward(inputs.data(), targets.data());
  }
  void backward();
  // Counts the micro-step; at the accumulation boundary runs the optimizer step
  // and returns true (last_step() tells what happened).
  bool step();

  // One optimizer step, DeepSpeed's train_batch: the trainer's one entry,
  // whatever the parallel layout. inputs[k] and targets[k] are micro-batch k
  // ([micro_batch, T] host arrays) of this data-parallel rank's share, k <
  // gradient_accumulation_steps; every stage of a pipeline passes the same.
  // Without a pipeline: forward, backward and step over them in turn; with
  // pipeline.stages > 1: this stage's 1F1B schedule
  // (engine/runtime/pipeline_runner.h). Returns the micro-batches' mean loss
  // (the last stage's, on every stage).
  double train_batch(const std::vector<engine::MicroBatch>& batches);
  double train_batch(const std::vector<const int32_t*>& inputs,
                     const std::vector<const int32_t*>& targets);

  // Validation: the forward of one micro-batch ([micro_batch, T] host arrays)
  // without backward, between optimizer steps; returns this rank's mean token
  // loss. Leaves no trace in training: no gradient, optimizer or loss-scaler
  // state, micro-step, step timer or traced event (engine_evaluate.cpp).
  double evaluate(const int32_t* inputs, const int32_t* targets,
                  const int32_t* positions = nullptr);

  // tag "": DeepSpeed's default, "global_step<N>". Returns the tag saved.
  std::string save_checkpoint(const std::string& dir, const std::string& tag = "",
                              const CheckpointSaveOptions& options = {});
  // tag "" reads the `latest` file. Returns the tag loaded.
  std::string load_checkpoint(const std::string& dir, const std::string& tag = "");
  // Whose checkpoints this run writes: its model and its lineage (a fresh
  // run's own, or the one of the checkpoint it resumed). keep_last deletes only these.
  engine::CheckpointOwner checkpoint_owner() const;

  // ---- state ------------------------------------------------------------------
  const Config& config() const { return cfg_; }
  int rank() const { return runtime_.rank(); }
  int world_size() const { return runtime_.world_size(); }
  // world = pipeline stages × data-parallel ranks × tensor-parallel ranks.
  int tensor_parallel_size() const { return runtime_.size(engine::ParallelAxis::tp); }
  int tensor_parallel_rank() const { return runtime_.coords().tp; }
  int pipeline_stages() const { return runtime_.size(engine::ParallelAxis::pp); }
  int pipeline_stage() const { return runtime_.coords().pp; }
  int data_parallel_size() const { return runtime_.size(engine::ParallelAxis::dp); }
  int data_parallel_rank() const { return runtime_.coords().dp; }
  int64_t global_step() const { return progress_.global_step; }
  int micro_step() const { return micro_step_; }
  int64_t skipped_steps() const { return progress_.skipped_steps; }
  int64_t applied_steps() const { return progress_.applied_steps; }
  float loss_scale() const { return scaler_.scale(); }
  const StepStats& last_step() const { return last_; }
  // wall_clock_breakdown: the timers of the last optimizer step (none measured when off).
  const engine::StepTimes& last_step_times() const { return last_times_; }
  // activation_checkpointing.profile: the checkpointed blocks' times of the last
  // optimizer step (zero without profile).
  const engine::CheckpointTimes& checkpoint_times() const { return checkpoint_times_; }
  // Pipeline stages: the last train_batch's schedule and its waiting (zero without stages).
  using PipelineTimes = engine::PipelineTimes;
  const PipelineTimes& last_pipeline_times() const;
  float current_lr() const;  // the schedule's, times lr_scale
  // Dynamic batching: the next optimizer step's learning rate is the schedule's
  // times this factor (DeepSpeed's VariableBatchSizeLR); 1 by default.
  void set_lr_scale(double scale) { lr_scale_ = scale; }
  double lr_scale() const { return lr_scale_; }
  // Where the data loader stands (documents as units), saved with every
  // checkpoint and restored by load_checkpoint (null when none was saved).
  void set_data_position(nlohmann::json position) { progress_.data_position = std::move(position); }
  const nlohmann::json& data_position() const { return progress_.data_position; }

  engine::CausalLM& model() { return *model_; }
  const engine::ModuleTree& module_tree() const { return *tree_; }
  kernels::Backend& backend() { return runtime_.backend(); }
  // Where ZeRO's buffers go (NCCL on GPUs); the same object as
  // host_communicator() unless the backend is CUDA.
  engine::comm::Communicator& communicator() { return runtime_.device_comm(); }
  engine::comm::Communicator& host_communicator() { return runtime_.host_comm(); }
  // Calls and bytes of both communicators (counted once when they are one).
  engine::comm::Communicator::Counters comm_counters() const { return runtime_.comm_counters(); }
  // The same per communicator: "world" (host and device), and with 3D
  // parallelism the groups "dp" (ZeRO's reductions), "tp" (the blocks'
  // all-reduces, the loss statistics, the norm), "pp" (activations and their
  // gradients, the norm, the loss) and "tied" (the tied embedding's gradients).
  std::vector<std::pair<std::string, engine::comm::Communicator::Counters>> comm_counters_by_group()
      const {
    return runtime_.comm_counters_by_group();
  }
  // Device (backend) memory, with the config's budget.
  engine::TrackingAllocator& allocator() { return runtime_.allocator(); }
  // Host memory of the offloaded optimizer and parameters (empty without offload).
  engine::TrackingAllocator& host_allocator() { return runtime_.host_allocator(); }
  // This rank's NVMe swap files by category (zero without NVMe offload).
  engine::CategoryBytes nvme_bytes() const { return zero_->nvme_bytes(); }
  engine::ZeroRuntime& zero() { return *zero_; }
  profiler::Tracer& tracer() { return runtime_.tracer(); }
  // Every collective and every compute-thread wait, per step (exposed vs total).
  profiler::CommTracer& comm_tracer() { return runtime_.comm_tracer(); }
  const std::string& backend_note() const { return runtime_.backend_note(); }
  // Which CPU GEMM provider runs each of the model's GEMMs (null on a GPU).
  const nlohmann::json& gemm_report() const { return gemm_report_; }
  // CUDA backend: delivers the CUPTI records of the profiled steps to the tracer
  // (kernel and memcpy events on GPU-stream lanes, attributed to modules) and
  // stops collecting until the next profiled step. Call before draining the
  // tracer. Returns the events added; 0 without a GPU.
  size_t flush_gpu_activity() { return runtime_.flush_gpu_activity(); }

  // Generation with a key/value cache on the current weights (the hybrid
  // engine): between optimizer steps, each rank its own prompts; training goes
  // on after it with the same weights. Bad prompts or parameters:
  // std::invalid_argument naming what is wrong (engine/generate/generator.h).
  // Under ZeRO-3 with hybrid_engine enabled and pin_parameters, every layer's
  // parameters are gathered at once for the call. The result's gather_ms is the
  // communication tracer's all-gather time during the call.
  engine::GenerationResult generate(const std::vector<std::vector<int>>& prompts,
                                    const engine::GenerationParams& params);
  // Why generate would refuse these prompts on this rank ("" when it would not):
  // generation_error's reasons and hybrid_engine.max_out_tokens.
  std::string generation_refusal(const std::vector<std::vector<int>>& prompts,
                                 const engine::GenerationParams& params) const;

  // Every parameter in fp32, the whole model's (collective: all ranks must call).
  std::vector<float> gather_parameters() { return checkpoint_->gather_parameters(); }
  // Sets every parameter from fp32 host values (param_count() of them, the whole
  // model's: a tensor-parallel rank takes its pieces), e.g. an llm.c
  // checkpoint; optimizer state is reset.
  void set_parameters(const std::vector<float>& flat) { checkpoint_->set_parameters(flat); }
  // The whole model's parameters (this rank holds fewer under tensor parallelism).
  int64_t param_count() const { return tree_->full_param_count(); }

  // Small collectives on host values, over the host communicator:
  double mean_over_ranks(double v) { return runtime_.mean_over_ranks(v); }  // identity on one rank
  int64_t broadcast_from_rank0(int64_t v) { return runtime_.broadcast_from_rank0(v); }
  // Equal sizes, rank order.
  std::vector<float> all_gather_floats(const std::vector<float>& mine) {
    return runtime_.all_gather_floats(mine);
  }
  void barrier() { runtime_.host_comm().barrier(); }

 private:
  void log(const std::string& line) const { runtime_.log(line); }
  // The constructor's parts, in order: the model's slice of the layout (before
  // its ModuleTree), the training state over it, the execution context.
  void place_model();
  void setup_training();
  void setup_context();
  // The model's activations for micro-batch [B, T] (the training shape, or a
  // larger one while generating) and the context's inputs in them.
  void bind_activations(int B, int T);
  // generate once its prompts are accepted: the model bound for them, ZeRO-3's
  // parameters pinned when asked, the generator run.
  engine::GenerationResult generate_on_bound_model(const std::vector<std::vector<int>>& prompts,
                                                   const engine::GenerationParams& params,
                                                   bool together);
  void describe_offload();
  void describe_optimizer_offload();
  void describe_param_offload();
  std::string host_memory_kind() const;  // "page-locked host memory" or "pageable host memory"
  void describe_schedule();
  void describe_checkpointing();
  void log_checkpoint_times();  // activation_checkpointing.profile, each optimizer step
  void begin_step();            // at each step's first micro-step
  // The one micro-batch forward and backward every path runs (forward/backward,
  // the pipeline's schedule): this stage's part of the model on the wired
  // activation slot. micro_forward copies the tokens in (first stage) and the
  // targets (last stage) and returns the mean token loss on the last stage (0
  // elsewhere); micro_backward's `boundary` is the step's last micro-batch,
  // whose gradient reductions it waits for.
  double micro_forward(const engine::MicroBatch& batch);
  void micro_backward(const engine::MicroBatch& batch, bool boundary);
  // Copies a micro-batch's arrays into the wired activation slot and points the
  // context at them; returns its element count B·T.
  size_t copy_in(const engine::MicroBatch& batch);
  void optimizer_step();       // timed take_optimizer_step, then the step's times
  void take_optimizer_step();  // at the accumulation boundary
  void apply_update(const engine::GradSummary& g, float scale);
  // Tied gradients summed, the norm over tensor-parallel ranks and stages.
  engine::GradSummary gradient_summary();

  Config cfg_;
  // Declared first, destroyed last: everything below allocates or communicates through it.
  engine::DeviceRuntime runtime_;
  std::unique_ptr<engine::CausalLM> model_;
  std::unique_ptr<engine::PipelineRunner> pipeline_;  // null without pipeline stages
  std::unique_ptr<engine::ModuleTree> tree_;
  nlohmann::json gemm_report_;
  std::unique_ptr<engine::Optimizer> optimizer_;
  engine::LossScaler scaler_;
  std::unique_ptr<engine::LrSchedule> schedule_;
  std::unique_ptr<engine::ZeroRuntime> zero_;
  std::unique_ptr<engine::ExecutionContext> ctx_;
  std::unique_ptr<engine::CheckpointIO> checkpoint_;
  uint32_t optimizer_name_ = 0;

  int micro_step_ = 0;
  engine::TrainingProgress progress_;
  StepStats last_;
  engine::StepTimerSet timers_;
  engine::StepTimes last_times_;
  engine::CheckpointTimes checkpoint_times_;
  std::vector<float> host_losses_;
  engine::MicroBatch forwarded_;  // forward()'s micro-batch, for backward()
  double lr_scale_ = 1.0;
  // hybrid_engine.inference_tp_size > 1: the resharded replica generate runs on,
  // built at the first call; destroyed first (its groups split this engine's
  // communicator).
  std::unique_ptr<InferenceReplica> inference_;
  // hybrid_engine enabled without release_inference_cache: the cache generate
  // keeps between calls.
  engine::KeptCache kept_cache_;
  // generate's decode thread choice (engine/generate/decode_threads.h), kept
  // across calls: rollouts and benchmarks generate a few tokens at a time.
  std::unique_ptr<engine::DecodeThreads> decode_threads_;
};

// Builds the model the config describes (hybrid.model.type: engine/model/registry.h).
std::unique_ptr<engine::CausalLM> make_model(const Config& cfg);

std::unique_ptr<Engine> initialize(const Config& cfg, std::unique_ptr<engine::CausalLM> model,
                                   EngineOptions opts = {});

}  // namespace hybrid
