// Runs a planned sweep: the run store (sweep, trials, pruned candidates,
// probe), resume, the strategy loop with its budgets and early stopping, the
// progress lines, the leaderboard and the best config.
//
// Resume: the same command (same config, space and settings: SweepPlan::identity)
// finds its sweep by name and identity, marks stale runs of killed trial
// processes, and runs only what is not finished — a trial left `running` by a
// killed tuner is marked `pending` (reason "interrupted: ...") and, with those
// an interrupted tuner left `pending`, run again; finished ones (ok, oom,
// timeout, crash, config_error, failed) are not.
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <vector>

#include "autotune/cluster_rates.h"
#include "autotune/sweep_plan.h"
#include "profiler/profile_data.h"
#include "profiler/store/run_store.h"

namespace hybrid::autotune {

struct SweepResult {
  int64_t sweep_id = 0;
  std::vector<profiler::TrialRow> trials;
  std::optional<profiler::TrialRow> best;       // after a confirmation run, its winner
  std::optional<profiler::TieBreak> tie_break;  // the confirmation run, when there was a tie
  std::string best_path;                        // written config ("" when no trial succeeded)
  std::string stop_reason;
  size_t ran = 0;  // trials run by this invocation
  bool interrupted = false;
};

// cancel: set from a signal handler to stop after killing the running trial.
SweepResult run_sweep(const SweepPlan& plan, std::ostream& out,
                      const std::atomic<bool>* cancel = nullptr);

// --dry-run: candidates with predicted memory and step time, pruned and dropped
// ones with reasons; reads the latest probe from the store if the file exists.
void print_dry_run(const SweepPlan& plan, std::ostream& out);

// The latest probe of this host in the store, else one run now through the
// launcher (stored), else defaults; `note` says which.
ClusterRates cluster_rates_for(const SweepPlan& plan, profiler::RunStore* store, bool may_probe,
                               std::string& note);

}  // namespace hybrid::autotune
