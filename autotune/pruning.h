// Memory-model pruning: before anything runs, every candidate's per-rank peak
// is predicted with the engine's analytical model (engine/memory_model.h) and
// candidates over the budget are set aside with their predicted need, so no
// trial is spent on a config that cannot fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autotune/candidate.h"
#include "autotune/device_info.h"
#include "engine/memory_model.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

// Predictions for every candidate, in order. `device` is the config's
// hybrid.device; a backend of that kind is created for the call only (its
// attention workspace size enters the activations) and released afterwards.
std::vector<engine::MemoryPrediction> predict_all(const std::vector<Candidate>& candidates,
                                                  const std::string& device);

struct PruneResult {
  std::vector<size_t> kept;  // indices into the candidates
  std::vector<profiler::PrunedCandidate> pruned;
};

// A candidate is pruned when its predicted total exceeds the budget.
PruneResult prune(const std::vector<Candidate>& candidates,
                  const std::vector<engine::MemoryPrediction>& predictions,
                  const MemoryBudget& budget);

// Memory-saving axes (AxisDef::saves_nothing: activation checkpointing,
// offloading) cost time to save memory, so a kept candidate that sets one to
// another value keeps it only when the same candidate with that axis at its
// saves-nothing value is predicted over the budget; otherwise it is removed
// from `kept` and returned with the prediction that shows it fits without.
// Axes with one value (a setting of the whole sweep) are left alone.
std::vector<DroppedCandidate> drop_unneeded_memory_savers(const std::vector<Candidate>& candidates,
                                                          std::vector<size_t>& kept,
                                                          const SearchSpace& space,
                                                          const MemoryBudget& budget,
                                                          const std::string& device);

// Default spaces only (DeepSpeed's num_tuning_micro_batch_sizes): among the
// kept candidates that differ only in micro-batch size (and the accumulation
// derived from it), keep `count` sizes spread evenly in log scale from the
// smallest to the largest; returns the indices removed.
std::vector<size_t> thin_micro_batches(const std::vector<Candidate>& candidates,
                                       std::vector<size_t>& kept, int count);

}  // namespace hybrid::autotune
