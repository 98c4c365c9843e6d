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
#include "engine/memory/tracking_allocator.h"
#include "engine/model/causal_lm.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "engine/parallel/pipeline_schedule.h"
#include "engine/parallel/topology.h"
#include "engine/precision/loss_scaler.h"
#include "engine/step_timers.h"
#include "engine/zero/zero_runtime.h"
#include "profiler/comm_tracer.h"
#include "profiler/gpu_hooks.h"
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

// What save_checkpoint writes beyond the resume state (the partition files with
// fp32 master weights and optimizer state, and meta.json).
struct CheckpointSaveOptions {
  // A "full" checkpoint: also DIR/TAG/model.bin, every weight in fp32 in llm.c's
  // format (hybrid.init_from, llm.c and hybrid-ckpt read it). Gathers the weights
  // (collective).
  bool full = false;
  bool save_latest = true;  // point DIR/latest at the tag, as DeepSpeed's save_latest
  // Testing: called on every rank once the files are complete, before meta.json
  // and latest are written.
  std::function<void()> before_publish;
};

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

class Engine {
 public:
  Engine(const Config& cfg, std::unique_ptr<engine::CausalLM> model, EngineOptions opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One micro-batch: inputs and targets are host arrays of [micro_batch, T], T the
  // training sequence length (config.seq_len(), at most the model's block size).
  // Returns this rank's mean token loss of the micro-batch.
  float forward(const int32_t* inputs, const int32_t* targets);
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
  // (engine/parallel/pipeline_schedule.h). Returns the micro-batches' mean loss
  // (the last stage's, on every stage).
  double train_batch(const std::vector<const int32_t*>& inputs,
                     const std::vector<const int32_t*>& targets);

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
  int rank() const { return host_comm_->rank(); }
  int world_size() const { return host_comm_->world_size(); }
  // world = pipeline stages × data-parallel ranks × tensor-parallel ranks.
  int tensor_parallel_size() const { return topology_ ? topology_->tp() : 1; }
  int tensor_parallel_rank() const { return topology_ ? topology_->coords(rank()).tp : 0; }
  int pipeline_stages() const { return topology_ ? topology_->pp() : 1; }
  int pipeline_stage() const { return topology_ ? topology_->coords(rank()).pp : 0; }
  int data_parallel_size() const { return topology_ ? topology_->dp() : world_size(); }
  int data_parallel_rank() const { return topology_ ? topology_->coords(rank()).dp : rank(); }
  int64_t global_step() const { return global_step_; }
  int micro_step() const { return micro_step_; }
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t applied_steps() const { return applied_steps_; }
  float loss_scale() const { return scaler_.scale(); }
  const StepStats& last_step() const { return last_; }
  // wall_clock_breakdown: the timers of the last optimizer step (none measured when off).
  const engine::StepTimes& last_step_times() const { return last_times_; }
  // activation_checkpointing.profile: the checkpointed blocks' times of the last
  // optimizer step (zero without profile).
  const engine::CheckpointTimes& checkpoint_times() const { return checkpoint_times_; }
  // Pipeline stages: the last train_batch's schedule (all micro-batches forward
  // and backward, not the optimizer step) and the part of it this stage spent
  // waiting on transfers: its bubble plus the transfers' own time.
  struct PipelineTimes {
    double schedule_ms = 0.0;
    double waiting_ms = 0.0;
  };
  const PipelineTimes& last_pipeline_times() const { return pipeline_times_; }
  float current_lr() const;

  engine::CausalLM& model() { return *model_; }
  const engine::ModuleTree& module_tree() const { return *tree_; }
  kernels::Backend& backend() { return *backend_; }
  // Where ZeRO's buffers go (NCCL on GPUs); the same object as
  // host_communicator() unless the backend is CUDA.
  engine::comm::Communicator& communicator() { return *device_comm_; }
  engine::comm::Communicator& host_communicator() { return *host_comm_; }
  // Calls and bytes of both communicators (counted once when they are one).
  engine::comm::Communicator::Counters comm_counters() const;
  // The same per communicator: "world" (host and device), and with 3D
  // parallelism the groups "dp" (ZeRO's reductions), "tp" (the blocks'
  // all-reduces, the loss statistics, the norm), "pp" (activations and their
  // gradients, the norm, the loss) and "tied" (the tied embedding's gradients).
  std::vector<std::pair<std::string, engine::comm::Communicator::Counters>> comm_counters_by_group()
      const;
  // Device (backend) memory, with the config's budget.
  engine::TrackingAllocator& allocator() { return *alloc_; }
  // Host memory of the offloaded optimizer and parameters (empty without offload).
  engine::TrackingAllocator& host_allocator() { return *host_alloc_; }
  // This rank's NVMe swap files by category (zero without NVMe offload).
  engine::CategoryBytes nvme_bytes() const { return zero_->nvme_bytes(); }
  engine::ZeroRuntime& zero() { return *zero_; }
  profiler::Tracer& tracer() { return tracer_; }
  // Every collective and every compute-thread wait, per step (exposed vs total).
  profiler::CommTracer& comm_tracer() { return *comm_tracer_; }
  const std::string& backend_note() const { return backend_note_; }
  // Which CPU GEMM provider runs each of the model's GEMMs (null on a GPU).
  const nlohmann::json& gemm_report() const { return gemm_report_; }
  // CUDA backend: delivers the CUPTI records of the profiled steps to the tracer
  // (kernel and memcpy events on GPU-stream lanes, attributed to modules) and
  // stops collecting until the next profiled step. Call before draining the
  // tracer. Returns the events added; 0 without a GPU.
  size_t flush_gpu_activity();

  // Every parameter in fp32, the whole model's (collective: all ranks must call).
  std::vector<float> gather_parameters();
  // Sets every parameter from fp32 host values (param_count() of them, the whole
  // model's: a tensor-parallel rank takes its pieces), e.g. an llm.c
  // checkpoint; optimizer state is reset.
  void set_parameters(const std::vector<float>& flat);
  // The whole model's parameters (this rank holds fewer under tensor parallelism).
  int64_t param_count() const { return tree_->full_param_count(); }

  // Small collectives on host values, over the host communicator:
  double mean_over_ranks(double v);  // identity on one rank
  int64_t broadcast_from_rank0(int64_t v);
  std::vector<float> all_gather_floats(const std::vector<float>& mine);  // equal sizes, rank order
  void barrier() { host_comm_->barrier(); }

 private:
  class CollectorSlot;
  void log(const std::string& line) const;
  void setup_communicators(EngineOptions& opts);
  void setup_gpu_profiling();
  void update_gpu_collection();  // at each step's first micro-step
  void describe_offload();
  void describe_optimizer_offload();
  void describe_param_offload();
  std::string host_memory_kind() const;  // "page-locked host memory" or "pageable host memory"
  void take_optimizer_step();            // step() at the accumulation boundary
  void begin_step();                     // at each step's first micro-step
  // 3D parallelism (engine/engine_topology.cpp): the topology, its groups and
  // the model's tensor-parallel slice; before the ModuleTree.
  void setup_topology();
  void split_groups();  // groups_, host_groups_ and tied_comm_, labelled and traced
  // This rank's group along `axis` for host values (the host communicator's).
  engine::comm::Communicator& host_group(engine::ParallelAxis axis) const;
  // Pipeline parallelism (engine/engine_pipeline.cpp).
  void setup_pipeline();                   // this stage's blocks; before the ZeRO runtime
  void restrict_zero_to_stage();           // after it
  engine::GradSummary gradient_summary();  // tied gradients summed, norm over stages
  void run_pipe_step(const engine::PipeStep& step, const std::vector<const int32_t*>& inputs,
                     const std::vector<const int32_t*>& targets, double& loss_sum);
  // The one micro-batch forward and backward every path runs (forward/backward,
  // the pipeline's schedule): this stage's part of the model on the wired
  // activation slot. micro_forward copies the tokens in (first stage) and the
  // targets (last stage) and returns the mean token loss on the last stage (0
  // elsewhere); micro_backward's `boundary` is the step's last micro-batch,
  // whose gradient reductions it waits for.
  double micro_forward(const int32_t* inputs, const int32_t* targets);
  void micro_backward(bool boundary);
  void pipe_transfer(const engine::PipeStep& step);
  // The flat range rank `rank`'s checkpoint partition holds.
  engine::FlatRange saved_range(int rank) const;
  nlohmann::json saved_partitions() const;  // meta.json's partitions: every rank's range
  // Throws CheckpointError unless the checkpoint was saved for this model.
  void check_same_model(const nlohmann::json& meta, const std::string& where) const;
  // Master weights and optimizer state of `range` from a checkpoint, whatever
  // its tensor-parallel size (engine/engine_checkpoint.cpp).
  void read_saved_state(const std::string& dir, const std::string& tag, const nlohmann::json& meta,
                        engine::FlatRange range, float* master, float* state);
  void describe_schedule();
  void describe_checkpointing();
  void log_checkpoint_times();  // activation_checkpointing.profile, each optimizer step

  Config cfg_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<kernels::Backend>
      host_backend_owned_;                    // the CPU backend, when backend_ is not one
  kernels::Backend* host_backend_ = nullptr;  // runs the offloaded optimizer
  std::string backend_note_;
  nlohmann::json gemm_report_;
  profiler::Tracer tracer_;
  // Declared before the communicators, so that it outlives them: NCCL delivers
  // its last records while it is destroyed, also when a constructor throws.
  std::unique_ptr<profiler::CommTracer> comm_tracer_;
  std::unique_ptr<engine::CommWaitRecorder> waits_;  // books waits into comm_tracer_
  std::unique_ptr<engine::comm::Communicator> host_comm_;
  std::unique_ptr<engine::comm::Communicator> device_comm_owned_;  // null when the host one serves
  engine::comm::Communicator* device_comm_ = nullptr;
  // 3D parallelism: the topology and this rank's groups, destroyed before the
  // world. groups_ are the device communicator's (activations and their
  // gradients, ZeRO's buffers), host_groups_ the host one's (the norm and
  // overflow agreement, the loss, gather_parameters); on the CPU both
  // communicators are one object and groups_ serve both (host_groups_ empty).
  // tied_comm_: the first and last stage (the tied embedding's gradients, device).
  std::unique_ptr<engine::Topology> topology_;
  engine::GroupCommunicators groups_;
  engine::GroupCommunicators host_groups_;
  std::unique_ptr<engine::comm::Communicator> tied_comm_;
  std::vector<int64_t> stage_param_counts_;  // each pipeline stage's flat space
  // What ZeRO reduces over: the data-parallel group (the device communicator
  // without a pipeline).
  engine::comm::Communicator* zero_comm_ = nullptr;
  engine::comm::Communicator* zero_host_comm_ = nullptr;
  std::unique_ptr<profiler::RangeListener> nvtx_;  // CUDA: NVTX range per scope
  std::unique_ptr<CollectorSlot> cupti_slot_;      // CUDA: forwards scopes to the live collector
  std::unique_ptr<profiler::GpuCollector> cupti_;  // CUDA, during profiled steps
  bool cupti_status_logged_ = false;
  std::unique_ptr<engine::TrackingAllocator> alloc_;
  std::unique_ptr<engine::TrackingAllocator> host_alloc_;
  std::unique_ptr<engine::CausalLM> model_;
  std::unique_ptr<engine::ModuleTree> tree_;
  std::unique_ptr<engine::ExecutionContext> ctx_;
  std::unique_ptr<engine::Optimizer> optimizer_;
  std::unique_ptr<engine::ZeroRuntime> zero_;
  engine::LossScaler scaler_;
  std::unique_ptr<engine::LrSchedule> schedule_;
  bool quiet_ = false;
  uint32_t optimizer_name_ = 0;

  int micro_step_ = 0;
  int64_t global_step_ = 0;
  int64_t applied_steps_ = 0;
  int64_t skipped_steps_ = 0;
  std::string lineage_ = engine::new_lineage();
  StepStats last_;
  engine::StepTimerSet timers_;
  engine::StepTimes last_times_;
  engine::CheckpointTimes checkpoint_times_;
  PipelineTimes pipeline_times_;
  std::vector<float> host_losses_;
};

// Builds the model the config describes (hybrid.model.type: engine/model/registry.h).
std::unique_ptr<engine::CausalLM> make_model(const Config& cfg);

std::unique_ptr<Engine> initialize(const Config& cfg, std::unique_ptr<engine::CausalLM> model,
                                   EngineOptions opts = {});

}  // namespace hybrid
