// `hybrid-tune generate`'s sweep: each candidate of the spec (autotune/
// generate_space.h) the memory model lets through runs hybrid-generate --json
// in its own directory (result.json, output.log) with a timeout that kills its
// process group; the metric is read from the result (tokens_per_s, or the
// 99th percentile of tpot_ms). With a run store, each trial's run is recorded
// in it by hybrid-generate --db, and its run_id joins the trial's entry. The best trial, every
// trial and every pruned candidate (with its predicted memory) go to the output JSON.
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/generate_space.h"

namespace hybrid::autotune {

struct GenerateTrial {
  GenerateCandidate candidate;
  std::string status = "pruned";  // pruned | ok | failed | timeout | cancelled
  std::string reason;             // why it was pruned or failed
  double tokens_per_s = 0, tpot_p99_ms = 0;
  double value = 0;             // the spec's metric (ok trials)
  int64_t run_id = 0;           // its run in the store (GenerateSweepOptions::db); 0: none
  std::vector<double> tpot_ms;  // its decode steps' times (autotune/generate_confirm.h)
  int attempts = 0;             // measurements taken (a noisy trial runs again)
  double robust_cv = 0;         // of tpot_ms (autotune/noise.h)
  bool noisy = false;           // still above the threshold after every attempt
};

struct GenerateSweepOptions {
  std::string generate_bin = "hybrid-generate";
  std::string dir;  // trial directories go under it
  // Run store each trial records its generation run in, named
  // "hybrid-tune generate KEY" ("" none).
  std::string db;
  // A trial whose decode steps' robust CV exceeds noise_threshold runs again,
  // up to `remeasure` more times, each in DIR/remeasure-N/KEY; the steadiest
  // attempt is kept (the training sweep's rule, autotune/noise.h).
  double noise_threshold = 0.10;
  int remeasure = 2;
  const std::atomic<bool>* cancel = nullptr;
};

// The trial, measured again while noisy (GenerateSweepOptions::remeasure).
GenerateTrial run_steady_trial(const GenerateSpec& s, const GenerateCandidate& c,
                               const GenerateSweepOptions& o);

// One candidate's hybrid-generate command line (its result into result_path).
std::vector<std::string> generate_trial_argv(const GenerateSpec& s, const GenerateCandidate& c,
                                             const std::string& bin,
                                             const std::string& result_path);
// The name of a trial's run in the store.
std::string trial_run_name(const GenerateCandidate& c);
GenerateTrial run_generate_trial(const GenerateSpec& s, const GenerateCandidate& c,
                                 const GenerateSweepOptions& o);

struct GenerateSweepResult {
  std::vector<GenerateTrial> trials;  // in candidate order, pruned ones included
  std::optional<size_t> best;         // index of the best ok trial
  bool interrupted = false;
};
// Runs what is not pruned, printing a line per candidate to `log`.
GenerateSweepResult run_generate_sweep(const GenerateSpec& s,
                                       const std::vector<GenerateCandidate>& candidates,
                                       const GenerateSweepOptions& o, std::ostream& log);

// {"metric", "value", "batch", "cache_dtype", "command", "trials": [...]}.
nlohmann::json generate_sweep_json(const GenerateSpec& s, const GenerateSweepResult& r,
                                   const std::string& bin);

}  // namespace hybrid::autotune
