// The Engine API, shaped like DeepSpeed's:
//
//   auto engine = hybrid::initialize(config, hybrid::make_gpt2(config));
//   for (...) {
//     float loss = engine->forward(inputs, targets);  // one micro-batch
//     engine->backward();
//     engine->step();   // optimizer step at the accumulation boundary
//   }
//   engine->save_checkpoint(dir, tag);  engine->load_checkpoint(dir, tag);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/config/config.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/gpt2.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "engine/precision/loss_scaler.h"
#include "engine/zero/zero_runtime.h"
#include "profiler/comm_tracer.h"
#include "profiler/tracer.h"

namespace hybrid {

using engine::Config;

struct StepStats {
  int64_t step = 0;          // global step just completed (1-based)
  bool skipped = false;      // fp16 overflow (or non-finite gradients): no update
  float lr = 0.0f;
  float loss_scale = 1.0f;   // the scale this step's gradients were computed with
  float grad_norm = 0.0f;    // unscaled global norm before clipping (0 when skipped)
};

struct EngineOptions {
  // Defaults: the config's device; MPI when launched with several ranks.
  std::unique_ptr<kernels::Backend> backend;
  std::unique_ptr<engine::comm::Communicator> communicator;
  std::unique_ptr<engine::Optimizer> optimizer;  // a client optimizer, as DeepSpeed accepts
  bool quiet = false;                            // no informational lines on stdout
};

class Engine {
 public:
  Engine(const Config& cfg, std::unique_ptr<engine::GPT2> model, EngineOptions opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One micro-batch: inputs and targets are host arrays of [micro_batch, seq_len].
  // Returns this rank's mean token loss of the micro-batch.
  float forward(const int32_t* inputs, const int32_t* targets);
  float forward(const std::vector<int32_t>& inputs, const std::vector<int32_t>& targets) {
    return forward(inputs.data(), targets.data());
  }
  void backward();
  // Counts the micro-step; at the accumulation boundary runs the optimizer step
  // and returns true (last_step() tells what happened).
  bool step();

  void save_checkpoint(const std::string& dir, const std::string& tag);
  // tag "" reads the `latest` file. Returns the tag loaded.
  std::string load_checkpoint(const std::string& dir, const std::string& tag = "");

  // ---- state ------------------------------------------------------------------
  const Config& config() const { return cfg_; }
  int rank() const { return comm_->rank(); }
  int world_size() const { return comm_->world_size(); }
  int64_t global_step() const { return global_step_; }
  int micro_step() const { return micro_step_; }
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t applied_steps() const { return applied_steps_; }
  float loss_scale() const { return scaler_.scale(); }
  const StepStats& last_step() const { return last_; }
  float current_lr() const;

  engine::GPT2& model() { return *model_; }
  const engine::ModuleTree& module_tree() const { return *tree_; }
  kernels::Backend& backend() { return *backend_; }
  engine::comm::Communicator& communicator() { return *comm_; }
  engine::TrackingAllocator& allocator() { return *alloc_; }
  engine::ZeroRuntime& zero() { return *zero_; }
  profiler::Tracer& tracer() { return tracer_; }
  // Every collective and every compute-thread wait, per step (exposed vs total).
  profiler::CommTracer& comm_tracer() { return *comm_tracer_; }
  const std::string& backend_note() const { return backend_note_; }

  // Every parameter in fp32 (collective: all ranks must call).
  std::vector<float> gather_parameters() { return zero_->full_master(); }
  // Sets every parameter from fp32 host values (param_count() of them), e.g. an
  // llm.c checkpoint; optimizer state is reset.
  void set_parameters(const std::vector<float>& flat);
  int64_t param_count() const { return tree_->param_count(); }

  // Small collectives on host values (through device scratch when needed):
  double mean_over_ranks(double v);                 // identity on one rank
  int64_t broadcast_from_rank0(int64_t v);
  std::vector<float> all_gather_floats(const std::vector<float>& mine);  // equal sizes, rank order
  void barrier() { comm_->barrier(); }

 private:
  void log(const std::string& line) const;

  Config cfg_;
  std::unique_ptr<kernels::Backend> backend_;
  std::string backend_note_;
  std::unique_ptr<engine::comm::Communicator> comm_;
  profiler::Tracer tracer_;
  std::unique_ptr<profiler::CommTracer> comm_tracer_;
  std::unique_ptr<engine::CommWaitRecorder> waits_;  // books waits into comm_tracer_
  std::unique_ptr<engine::TrackingAllocator> alloc_;
  std::unique_ptr<engine::GPT2> model_;
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
  StepStats last_;
  std::vector<float> host_losses_;
  engine::Buffer scalar_;  // 8 bytes of device scratch for the small collectives
};

// Builds the model the config describes (GPT-2).
std::unique_ptr<engine::GPT2> make_gpt2(const Config& cfg);

std::unique_ptr<Engine> initialize(const Config& cfg, std::unique_ptr<engine::GPT2> model,
                                   EngineOptions opts = {});

}  // namespace hybrid
