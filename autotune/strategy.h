// Search strategies: which candidate to run next, given what has been measured.
//   grid    every candidate in enumeration order (first axis slowest)
//   random  a seeded permutation (the same seed gives the same order anywhere)
//   model   the candidate whose cost-model prediction is best, refitting the
//           model (autotune/cost_model.h) after every trial; it stops by itself
//           once no untried candidate is predicted to beat the best measured
//           metric by more than min_gain (after at least min_trials ok trials).
// Budgets (trials, wall time) and early stopping (K trials without improvement)
// are the sweep's, common to all strategies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/cost_model.h"
#include "autotune/metric.h"

namespace hybrid::autotune {

// One finished trial, as strategies see it (index into the candidate list).
struct Observation {
  size_t index = 0;
  bool ok = false;
  double metric = 0;  // ok only
  double step_s = 0;  // ok only
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // The next candidate among `remaining` (untried, in enumeration order), or
  // nullopt to stop. `history` holds every finished trial, oldest first.
  virtual std::optional<size_t> next(const std::vector<size_t>& remaining,
                                     const std::vector<Observation>& history) = 0;
  // The predicted step time of a candidate (seconds), when the strategy has a model.
  virtual std::optional<double> predicted_step_s(size_t) const { return std::nullopt; }
  // Why the strategy stopped by itself ("" when it did not).
  virtual std::string stop_reason() const { return ""; }
};

std::unique_ptr<Strategy> make_grid_strategy();
std::unique_ptr<Strategy> make_random_strategy(uint64_t seed, size_t candidate_count);

struct ModelStrategyOptions {
  Metric metric = Metric::throughput;
  double min_gain = 0.0;  // relative predicted improvement needed to go on
  // Ok trials before the model may stop the sweep: one more than it has weights,
  // so that it never stops on a fit that merely interpolates a few points.
  size_t min_trials = kFeatureCount + 1;
};
// features[i]: the cost-model features of candidate i.
std::unique_ptr<Strategy> make_model_strategy(std::vector<StepFeatures> features,
                                              ModelStrategyOptions opts);

// Trials without improvement at the end of the history, oldest first (early stopping).
size_t trials_since_improvement(Metric m, const std::vector<Observation>& history);

// "grid" | "random" | "model"; throws TuneError naming the value otherwise.
std::string parse_strategy(const std::string& name);

// A portable seeded permutation of 0..n-1 (splitmix64 + Fisher–Yates).
std::vector<size_t> seeded_permutation(size_t n, uint64_t seed);

}  // namespace hybrid::autotune
