// Pipeline bubbles per stage: how long each stage's compute thread waited on
// its neighbours' activations and gradients (StepRankRow::bubble_ms) against
// its step time, for the communication report and the viewer.
#pragma once

#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

// One pipeline stage, over its ranks and the stored steps: means per step.
struct StageBubble {
  int stage = 0;
  int ranks = 0;         // ranks of this stage with step rows
  double bubble_ms = 0;  // per step, rank mean
  double step_ms = 0;    // per step, rank mean (compute + exposed comm)
  double fraction() const { return step_ms > 0 ? bubble_ms / step_ms : 0.0; }
};

// By stage; empty when the run has no pipeline stages (every rank at stage 0
// and no bubble recorded). A rank missing from the run's ranks counts as stage 0.
std::vector<StageBubble> stage_bubbles(const RunProfile& profile);

// Rank -> its pipeline stage (0 when unknown), for lane labels.
int stage_of(const RunProfile& profile, int rank);
bool has_pipeline(const RunProfile& profile);

}  // namespace hybrid::profiler
