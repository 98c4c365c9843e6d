// `hybrid-tune generate`'s sweep in rollout mode (autotune/rollout_space.h):
// each candidate that is not pruned runs as a hybrid-train trial through the
// tuner's trial runner (autotune/trial_runner.h: its own directory with
// config.json, result.json and output.log, the launcher template for `nprocs`
// ranks, a timeout that kills the process group, the outcome classified from
// the exit status and the result). The metric is read from the result's
// `rollouts`: the first rollout is left out when there are more (it builds the
// inference replica and allocates the cache), tokens/s is the measured ones' new
// tokens over their gather and generate time, latency_p99 the 99th percentile
// of their decode steps' times (rank 0's tpot samples, pooled).
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/rollout_space.h"

namespace hybrid::autotune {

struct RolloutTrial {
  RolloutCandidate candidate;
  std::string status = "pruned";  // pruned | ok | failed | oom | timeout | crash | ... | cancelled
  std::string reason;
  int rollouts = 0;  // measured ones
  double tokens_per_s = 0, tpot_p99_ms = 0;
  double value = 0;  // the spec's metric (ok trials)
};

struct RolloutSweepOptions {
  std::string train_bin = "hybrid-train";
  std::string dir;  // trial directories go under it
  // Run store each trial's hybrid-train records its run and rollouts in,
  // named "hybrid-tune rollout KEY" ("" none).
  std::string db;
  const std::atomic<bool>* cancel = nullptr;
};

// The measured figures from a trial's result JSON; the reason when it has
// none to give.
std::string read_rollouts(RolloutTrial& t, const nlohmann::json& result, Metric m);

RolloutTrial run_rollout_trial(const RolloutSpec& s, const RolloutCandidate& c,
                               const RolloutSweepOptions& o);

struct RolloutSweepResult {
  std::vector<RolloutTrial> trials;  // in candidate order, pruned ones included
  std::optional<size_t> best;
  bool interrupted = false;
};
RolloutSweepResult run_rollout_sweep(const RolloutSpec& s,
                                     const std::vector<RolloutCandidate>& candidates,
                                     const RolloutSweepOptions& o, std::ostream& log);

// {"mode": "rollout", "metric", "value", "key", "batch", "cache_dtype",
//  "inference_tp_size", "pin_parameters", "config" (the best trial's), "trials": [...]}.
nlohmann::json rollout_sweep_json(const RolloutSpec& s, const RolloutSweepResult& r);

}  // namespace hybrid::autotune
