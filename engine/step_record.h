// One training step as the trainer measured it, made once per step: the
// progress line, the run's summary (engine/train_summary.h) and the run store
// (engine/run_recorder.h) read their figures from it and compute none again.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/step_timers.h"

namespace hybrid {

struct StepRecord {
  int64_t step = 0;     // global step, numbered from 1
  double loss = 0.0;    // averaged over micro-batches and ranks
  bool traced = false;  // inside the profiling window (engine/profile_window.h)
  // The update (Engine::last_step): skipped on an fp16 overflow.
  bool skipped = false;
  float lr = 0.0f, loss_scale = 1.0f, grad_norm = 0.0f;
  // Wall time of the step, the device waited for, and the rates over all ranks
  // (FLOPs: model_flops_per_step's).
  double ms = 0.0, tokens_per_s = 0.0, flops_per_s = 0.0;
  // This rank's communication (profiler::CommTracer's step totals).
  double comm_ms = 0.0;          // collectives in flight
  double exposed_comm_ms = 0.0;  // the part the compute lane waited for
  double bubble_ms = 0.0;        // waits on pipeline transfers
  double compute_ms() const { return ms - exposed_comm_ms; }
  // Pipeline stages: the share of the schedule this rank spent waiting on transfers.
  std::optional<double> pipeline_waiting;
  engine::StepTimes timers;  // wall_clock_breakdown (none measured when off)
};

}  // namespace hybrid
