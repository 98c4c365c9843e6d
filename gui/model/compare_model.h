// Two runs side by side: the step-time delta (median step time over each run's
// steps, and the profiled steps' breakdown totals) and per-layer deltas, rows
// matched by module name (and by kind for the optimizer / exposed comm / other rows).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gui/model/layer_breakdown.h"
#include "profiler/profile_data.h"

namespace hybrid::gui {

struct CompareRow {
  std::string name;
  LayerRowKind kind = LayerRowKind::module;
  int depth = 0;
  std::optional<double> a_ms;  // rank-mean total time; empty when the run lacks the row
  std::optional<double> b_ms;
  std::optional<double> a_share;
  std::optional<double> b_share;
  double delta_ms() const { return b_ms.value_or(0) - a_ms.value_or(0); }
  // (b − a) / a; empty when a is missing or zero.
  std::optional<double> delta_fraction() const {
    if (!a_ms || *a_ms == 0 || !b_ms) return std::nullopt;
    return (*b_ms - *a_ms) / *a_ms;
  }
};

struct RunComparison {
  int64_t a_run = 0, b_run = 0;
  double a_median_step_ms = 0, b_median_step_ms = 0;      // over all steps of each run
  double a_tokens_per_s = 0, b_tokens_per_s = 0;          // medians over steps not skipped
  double a_profiled_step_ms = 0, b_profiled_step_ms = 0;  // LayerBreakdown::step_ms.mean
  std::vector<CompareRow> rows;  // a's rows in model order, then rows only b has

  double step_delta_ms() const { return b_median_step_ms - a_median_step_ms; }
  std::optional<double> step_delta_fraction() const {
    if (a_median_step_ms == 0) return std::nullopt;
    return (b_median_step_ms - a_median_step_ms) / a_median_step_ms;
  }
  // b's speed-up over a: a's step time over b's (> 1: b is faster).
  std::optional<double> speedup() const {
    if (b_median_step_ms == 0) return std::nullopt;
    return a_median_step_ms / b_median_step_ms;
  }
};

RunComparison compare_runs(const profiler::RunProfile& a, const LayerBreakdown& a_layers,
                           const profiler::RunProfile& b, const LayerBreakdown& b_layers);

}  // namespace hybrid::gui
