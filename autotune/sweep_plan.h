// Everything decided before the first trial: the settings (command line over
// the config's autotuning block over defaults), the search space, the
// candidates, their memory predictions and what pruning set aside. Nothing is
// run and nothing is written here, so --dry-run is this plus a table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/autotuning_options.h"
#include "autotune/candidate.h"
#include "autotune/device_info.h"
#include "autotune/hostfile.h"
#include "autotune/metric.h"
#include "autotune/noise.h"
#include "autotune/outcome.h"
#include "autotune/space.h"
#include "engine/config/config.h"
#include "engine/memory_model.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

// The command line as given (empty / 0 / -1: not given).
struct TuneOptions {
  std::string config;
  std::string space;
  int nprocs = 1;
  std::string launcher;
  std::string hostfile;  // Open MPI hostfile: trials run across its hosts
  std::string strategy;
  std::string metric;
  std::string db = "results/hybrid.db";
  std::string out;  // "": best.json beside the database
  bool dry_run = false;
  int max_trials = 0;
  double time_budget_s = 0;
  int early_stop = -1;
  double trial_timeout_s = 600;
  int steps = 0;
  int start_step = 0;
  std::string statistic = "median";
  uint64_t seed = 0;
  std::string name;
  bool no_prune = false;
  bool no_probe = false;
  std::string train_bin;          // "": found beside hybrid-tune
  double min_gain = 0.0;          // model strategy: predicted improvement needed to go on
  double noise_threshold = 0.10;  // robust CV of a trial's step times above which it is noisy
  int remeasure = 2;              // re-measurements of a noisy trial
  int confirm_rounds = 3;         // interleaved rounds that break a tie; 0: no confirmation
  bool confirm_best = false;      // confirm the best against the runner-up even without a tie
};

// Resolved settings of the sweep.
struct SweepSettings {
  std::string config_path, space_path;
  int nprocs = 1;
  std::string launcher;          // the template actually used ({hostfile} resolved)
  std::vector<HostSlots> hosts;  // from --hostfile; empty: this host
  std::string strategy;          // grid | random | model
  Metric metric = Metric::throughput;
  std::string db, out, name, train_bin, self_exe;
  bool dry_run = false, prune = true, probe = true;
  int max_trials = 50;
  double time_budget_s = 0;
  int early_stop = 5;
  double trial_timeout_s = 600;
  int steps = 5, start_step = 3;
  StepStatistic statistic = StepStatistic::median;
  uint64_t seed = 0;
  double min_gain = 0.0;
  NoiseOptions noise;
};

struct SweepPlan {
  SweepSettings settings;
  nlohmann::json base;  // the config file as loaded
  engine::Config base_cfg;
  AutotuningOptions autotuning;
  SearchSpace space;
  DeviceInfo device;
  MemoryBudget budget;
  std::vector<Candidate> runnable;                // what trials may run, grid order
  std::vector<engine::MemoryPrediction> memory;   // per runnable candidate
  std::vector<profiler::PrunedCandidate> pruned;  // over the memory budget
  std::vector<DroppedCandidate> dropped;          // invalid, or not among the tuned micro-batches
  size_t enumerated = 0;                          // candidates before pruning
  std::vector<std::string> notes;

  // What makes two invocations the same sweep (stored as the sweep's space_json).
  nlohmann::json identity() const;
};

// Throws TuneError / engine::ConfigError naming the input at fault.
SweepPlan plan_sweep(const TuneOptions& opts);

}  // namespace hybrid::autotune
