// A sweep's trials as a leaderboard: each trial with its typed config, the
// metric with its unit and direction (profiler/tables/metric_registry.h), the
// best measured trial and the ranking of the measured ones, and the candidates
// the memory model pruned. The viewer's sweeps window shows it.
#pragma once

#include <optional>
#include <vector>

#include "profiler/sweep_data.h"
#include "profiler/tables/metric_registry.h"
#include "profiler/tables/trial_config.h"

namespace hybrid::profiler {

// The 95 % interval of a trial's median step time (its StepSpread) in the
// metric's units: a time metric (unit "ms") is the step time itself; a rate is
// work per step over the step time, metric * latency_ms / t (its bounds swap).
// nullopt for a trial without a spread, a metric or a step time.
struct MetricRange {
  double lo = 0, hi = 0;  // lo <= hi
  friend bool operator==(const MetricRange&, const MetricRange&) = default;
};
std::optional<MetricRange> trial_metric_interval(const MetricInfo& metric, const TrialRow& t);

struct LeaderboardRow {
  TrialRow trial;
  TrialConfig config;
  std::optional<MetricRange> interval;  // trial_metric_interval of the trial
};

struct SweepLeaderboard {
  SweepInfo sweep;
  MetricInfo metric;                 // of sweep.metric
  std::vector<LeaderboardRow> rows;  // as the store lists them
  int best = -1;                     // ranking.front(), -1 when nothing was measured
  std::vector<int> ranking;  // ok trials with a metric (not NaN), best first; ties: store order
  std::vector<PrunedCandidate> pruned;
  std::vector<TrialConfig> pruned_config;  // parallel to pruned

  int count(TrialStatus s) const;
};

// The ok trials with a metric (not NaN), best first by `metric`'s direction; ties
// keep the given order. Indices into `trials`.
std::vector<int> rank_trials(const MetricInfo& metric, const std::vector<TrialRow>& trials);

SweepLeaderboard build_sweep_leaderboard(const SweepInfo& sweep,
                                         const std::vector<TrialRow>& trials,
                                         const std::vector<PrunedCandidate>& pruned);

}  // namespace hybrid::profiler
