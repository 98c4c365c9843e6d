// What the Generation window shows: the store's generation rows (hybrid-generate,
// its --bench, hybrid-train's rollout steps) with the name of their run, every
// run's or the shown run's, and the scale of the per-token latency bars (tpot
// p50, p90, p99 of each row, drawn against the largest p99).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/generation_data.h"
#include "profiler/profile_data.h"

namespace hybrid::gui {

struct GenerationLine {
  profiler::GenerationRow row;
  std::string run_name;  // empty for a run the list does not hold
};

struct GenerationTable {
  std::vector<GenerationLine> lines;  // by run, then as stored
  double tpot_scale_ms = 0;           // the largest tpot p99: a full bar (0: no row has one)
  bool any_breakdown = false;         // a rollout row's step, e2e, gather, ... columns
};

// `only_run`: that run's rows alone (nullopt: every run's).
GenerationTable build_generation_table(const std::vector<profiler::RunInfo>& runs,
                                       const std::vector<profiler::GenerationRow>& rows,
                                       std::optional<int64_t> only_run = std::nullopt);

// The fraction of a full bar a latency takes (0 without a scale), in [0, 1].
double bar_fraction(double ms, double scale_ms);

}  // namespace hybrid::gui
