// The sweeps window as data: a sweep's leaderboard from the data layer
// (profiler/tables/sweep_leaderboard.h: typed trial configs, the metric's
// direction), sort and filter, the scatter of metric against micro-batch size by
// ZeRO stage, and the candidates the memory model pruned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/sweep_data.h"
#include "profiler/tables/sweep_leaderboard.h"

namespace hybrid::gui {

using profiler::parse_trial_config;
using profiler::TrialConfig;
using SweepRow = profiler::LeaderboardRow;

struct ScatterPoint {
  double micro_batch = 0;
  double metric = 0;
  int zero_stage = -1;  // -1 when unknown
  int row = 0;          // index into SweepTable::rows
};

// The data layer's leaderboard (typed configs, the metric's unit and direction,
// best and ranking) plus what the window plots.
struct SweepTable : profiler::SweepLeaderboard {
  std::vector<ScatterPoint> scatter;  // ok trials with a metric and a micro batch
};

SweepTable build_sweep_table(const profiler::SweepInfo& sweep,
                             const std::vector<profiler::TrialRow>& trials,
                             const std::vector<profiler::PrunedCandidate>& pruned);

enum class SweepColumn {
  id,
  key,
  micro_batch,
  grad_accum,
  zero_stage,
  reduce_bucket,
  allgather_bucket,
  overlap,
  dtype,
  metric,
  tokens_per_s,
  latency,
  predicted_mem,
  peak_mem,
  status,
  reason,
};

struct SweepFilter {
  std::string text;      // case-insensitive substring of key, status, reason or dtype
  bool ok_only = false;  // only trials that measured a metric
};

// Rows that pass the filter, sorted by the column; rows without a value for the
// column come last in either direction; ties keep the store's order.
std::vector<int> sweep_display_order(const SweepTable& t, SweepColumn column, bool ascending,
                                     const SweepFilter& filter = {});

}  // namespace hybrid::gui
