// What hybrid-tune prints: the progress line after each trial (count, outcome,
// best so far, ETA), the leaderboard (units in every column), pruned and
// dropped candidates with their reasons, the memory model's error against the
// measured peaks, and the dry-run's candidate table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autotune/metric.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct ProgressInfo {
  size_t done = 0;     // trials finished in the sweep (resumed ones included)
  size_t planned = 0;  // upper bound on the sweep's trials
  const profiler::TrialRow* trial = nullptr;
  const profiler::TrialRow* best = nullptr;  // best so far (may be the trial)
  double eta_s = -1;                         // < 0: unknown
};
std::string progress_line(Metric m, const ProgressInfo& p);

// Best first; failed trials after the ok ones.
std::vector<profiler::TrialRow> ranked(Metric m, std::vector<profiler::TrialRow> trials);
std::optional<profiler::TrialRow> best_trial(Metric m,
                                             const std::vector<profiler::TrialRow>& trials);

std::string leaderboard(Metric m, const std::vector<profiler::TrialRow>& trials,
                        size_t max_rows = 50);
std::string pruned_table(const std::vector<profiler::PrunedCandidate>& pruned);

// "memory model vs measured peak (per rank): mean |error| 1.2 %, worst +3.4 % (key)".
struct MemoryCheck {
  size_t trials = 0;
  double mean_abs_error = 0;  // relative
  double worst_error = 0;     // signed, relative: (predicted − measured) / measured
  std::string worst_key;
};
MemoryCheck memory_check(const std::vector<profiler::TrialRow>& trials);
std::string format_memory_check(const MemoryCheck& c);

}  // namespace hybrid::autotune
