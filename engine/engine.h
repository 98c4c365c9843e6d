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
#include "profiler/tracer.h"

namespace hybrid {

using engine::Config;

// Exposed (non-overlapped) communication: time the compute thread spent waiting.
class ExposedCommClock final : public engine::CommWaitRecorder {
 public:
  void record_wait(int64_t start_ns, int64_t end_ns) override { total_ns_ += end_ns - start_ns; }
  int64_t total_ns() const { return total_ns_; }
  void reset() { total_ns_ = 0; }

 private:
  int64_t total_ns_ = 0;
};

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
  ExposedCommClock& exposed_comm() { return exposed_; }
  const std::string& backend_note() const { return backend_note_; }

  // Every parameter in fp32 (collective: all ranks must call).
  std::vector<float> gather_parameters() { return zero_->full_master(); }
  // Sets every parameter from fp32 host values (param_count() of them), e.g. an
  // llm.c checkpoint; optimizer state is reset.
  void set_parameters(const std::vector<float>& flat);
  int64_t param_count() const { return tree_->param_count(); }

  // Mean of a per-rank value over all ranks (collective; identity on one rank).
  double mean_over_ranks(double v);

 private:
  void log(const std::string& line) const;

  Config cfg_;
  std::unique_ptr<kernels::Backend> backend_;
  std::string backend_note_;
  std::unique_ptr<engine::comm::Communicator> comm_;
  profiler::Tracer tracer_;
  ExposedCommClock exposed_;
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
  engine::Buffer scalar_;  // device scratch for mean_over_ranks
};

// Builds the model the config describes (GPT-2).
std::unique_ptr<engine::GPT2> make_gpt2(const Config& cfg);

std::unique_ptr<Engine> initialize(const Config& cfg, std::unique_ptr<engine::GPT2> model,
                                   EngineOptions opts = {});

}  // namespace hybrid
