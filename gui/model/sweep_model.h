// The sweeps window as data: a sweep's trials as a leaderboard (config columns
// read from each trial's ds_config, the metric, status and failure reason), sort
// and filter, the scatter of metric against micro-batch size by ZeRO stage, and
// the candidates the memory model pruned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::gui {

// The knobs a sweep varies, read from a ds_config.json; missing keys stay empty.
struct TrialConfig {
  std::optional<int> micro_batch;  // train_micro_batch_size_per_gpu
  std::optional<int> grad_accum;   // gradient_accumulation_steps
  std::optional<int> zero_stage;   // zero_optimization.stage
  std::optional<double> reduce_bucket;     // zero_optimization.reduce_bucket_size (elements)
  std::optional<double> allgather_bucket;  // zero_optimization.allgather_bucket_size
  std::optional<bool> overlap_comm;        // zero_optimization.overlap_comm
  std::string dtype;                       // "bf16" | "fp16" | "fp32"; "" when unknown
};
// Never throws: text that is not JSON gives an empty config.
TrialConfig parse_trial_config(std::string_view config_json);

struct SweepRow {
  profiler::TrialRow trial;
  TrialConfig config;
};

struct ScatterPoint {
  double micro_batch = 0;
  double metric = 0;
  int zero_stage = -1;  // -1 when unknown
  int row = 0;          // index into SweepTable::rows
};

struct SweepTable {
  profiler::SweepInfo sweep;
  bool higher_is_better = true;  // from the metric's name: times are minimised
  std::vector<SweepRow> rows;    // as the store lists them
  int best = -1;                 // row of the best ok trial
  std::vector<ScatterPoint> scatter;  // ok trials with a metric and a micro batch
  std::vector<profiler::PrunedCandidate> pruned;
  std::vector<TrialConfig> pruned_config;  // parallel to pruned
  int count(profiler::TrialStatus s) const;
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
