// The pipeline runner (pipeline.stages > 1, issue 16; docs/parallelism.md):
// this stage's part of a training step.
//
// Owns the model's cut into stages (which blocks this stage runs, and every
// stage's flat-space size, which checkpoints need), this stage's 1F1B schedule
// over a batch's micro-batches, the transfers of activations and their
// gradients between neighbouring stages, the tied embedding's gradients shared
// by the first and the last stage, and the times of the last schedule. The
// micro-batch forward and backward themselves are the Engine's; the optimizer
// step after the schedule too.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/config/config.h"
#include "engine/model/causal_lm.h"
#include "engine/parallel/pipeline_schedule.h"
#include "engine/runtime/device_runtime.h"
#include "engine/runtime/micro_batch.h"
#include "engine/zero/zero_runtime.h"

namespace hybrid::engine {

// The last schedule (all micro-batches forward and backward, not the optimizer
// step) and the part of it this stage spent waiting on transfers: its bubble
// plus the transfers' own time.
struct PipelineTimes {
  double schedule_ms = 0.0;
  double waiting_ms = 0.0;
};

class PipelineRunner {
 public:
  // The one micro-batch forward (returns the mean token loss on the last stage,
  // 0 elsewhere) and backward (`boundary`: the step's last micro-batch) that
  // the schedule runs, on the activation slot it selected.
  struct MicroSteps {
    std::function<double(const MicroBatch& batch)> forward;
    std::function<void(const MicroBatch& batch, bool boundary)> backward;
  };

  // Cuts the model to this stage's blocks (before its ModuleTree is built).
  PipelineRunner(const Config& cfg, DeviceRuntime& runtime, CausalLM& model);

  // This stage's schedule over the batch (batches[k]: micro-batch k). Returns
  // the micro-batches' mean loss: the last stage's, on every stage.
  double run(const std::vector<MicroBatch>& batches, ExecutionContext& ctx,
             const MicroSteps& steps);
  // Sums the tied embedding's gradients of the first and the last stage; in the
  // norm they count on the first stage only (a weight 0 elsewhere).
  void reduce_tied_gradients(ZeroRuntime& zero, std::vector<WeightedRange>& weights);

  int64_t stage_param_count(int stage) const { return stage_param_counts_[size_t(stage)]; }
  const PipelineTimes& times() const { return times_; }

 private:
  void run_step(const PipeStep& step, const std::vector<MicroBatch>& batches, ExecutionContext& ctx,
                const MicroSteps& steps, double& loss_sum);
  void transfer(const PipeStep& step);

  const Config& cfg_;
  DeviceRuntime& runtime_;
  CausalLM& model_;
  int stage_ = 0, stages_ = 1;
  std::vector<int64_t> stage_param_counts_;  // each stage's flat space
  PipelineTimes times_;
};

}  // namespace hybrid::engine
