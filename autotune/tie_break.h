// Breaking a tie between winners within noise (autotune/noise.h): the tied
// candidates run again, interleaved — round r runs them all once, in an order
// rotated by r, so none is always first after a pause or last — and their step
// times, pooled over the rounds, decide. The same rule as the tie: the
// candidate with the best pooled median wins, and the decision holds when its
// 95 % interval is clear of every other candidate's; otherwise the tie stands
// (the candidates are equivalent within noise) and the best median is written.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autotune/metric.h"
#include "autotune/noise.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct ConfirmationResult {
  int rounds = 0;
  size_t winner = 0;                          // index into the tied candidates
  bool decided = false;                       // false: still within noise
  std::vector<profiler::StepSpread> spreads;  // per candidate, pooled step times
  std::vector<double> medians;                // per candidate, metric of the pooled median
  std::vector<std::optional<MetricInterval>> intervals;  // per candidate, metric units
  std::string summary;                                   // what hybrid-tune prints
};

// step_ms[c]: tied candidate c's confirmation step times pooled over `rounds`
// (empty: every confirmation trial of c failed; c cannot win).
ConfirmationResult decide_confirmation(Metric m, const std::vector<profiler::TrialRow>& tied,
                                       const std::vector<std::vector<double>>& step_ms, int rounds);

// measure(c, round): runs tied candidate c once, returns its window's step times.
using ConfirmMeasure = std::function<std::vector<double>(size_t candidate, int round)>;
// Interleaved rounds (candidate order rotated each round), then decide_confirmation.
// stop() is asked before each trial (an interrupted tuner); nullopt when it said stop.
std::optional<ConfirmationResult> run_confirmation(Metric m,
                                                   const std::vector<profiler::TrialRow>& tied,
                                                   int rounds, const ConfirmMeasure& measure,
                                                   const std::function<bool()>& stop = {});

// The store's record of it (the candidates with their first and confirmed figures).
profiler::TieBreak tie_break_row(Metric m, int64_t sweep_id,
                                 const std::vector<profiler::TrialRow>& tied,
                                 const ConfirmationResult& r);

// The confirmation an earlier invocation of the sweep finished and stored for these
// tied candidates (same keys in the same order, same rounds), if any: a tuner killed
// after storing it (while writing best.json) resumes with it instead of running the
// confirmation again. The latest such record wins.
std::optional<profiler::TieBreak> stored_confirmation(const std::vector<profiler::TieBreak>& stored,
                                                      const std::vector<profiler::TrialRow>& tied,
                                                      int rounds);

}  // namespace hybrid::autotune
