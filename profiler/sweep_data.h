// The data layer's rows of the autotuner: sweeps, their trials, candidates the
// memory model pruned, and what `hybrid-tune probe` measured. The autotuner
// writes them through the run store (profiler/store/run_store.h); the viewer
// and reports read them. Conventions as in profiler/profile_data.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::profiler {

enum class SweepStatus : uint8_t { running, done, failed, stopped };
enum class TrialStatus : uint8_t {
  pending,
  running,
  ok,
  oom,
  timeout,
  crash,
  config_error,
  failed,
  node_failure,  // a host of the trial was lost (its daemon died or became unreachable)
  cancelled,     // the scheduler or its user cancelled the trial's job (scancel)
  diverged       // the run's loss went NaN or infinite (engine/divergence.h)
};

std::string_view to_string(SweepStatus s);
std::string_view to_string(TrialStatus s);
// Each throws std::invalid_argument naming the value when it is not one of the above.
SweepStatus parse_sweep_status(std::string_view s);
TrialStatus parse_trial_status(std::string_view s);

struct SweepInfo {
  int64_t id = 0;  // store
  std::string name;
  std::string base_config_json = "{}";
  std::string space_json = "{}";
  std::string strategy;  // "grid" | "random" | "model"
  std::string metric;    // e.g. "tokens_per_s"
  SweepStatus status = SweepStatus::running;
  double created_at = 0;  // store
  std::optional<double> finished_at;

  friend bool operator==(const SweepInfo&, const SweepInfo&) = default;
};

// The spread of a trial's measured step times (the window the metric covers).
struct StepSpread {
  int64_t count = 0;
  double median_ms = 0;
  double q1_ms = 0, q3_ms = 0;           // quartiles
  double mad_ms = 0;                     // median absolute deviation, unscaled
  double cv = 0;                         // standard deviation / mean
  double ci_low_ms = 0, ci_high_ms = 0;  // 95 % distribution-free interval of the median

  friend bool operator==(const StepSpread&, const StepSpread&) = default;
};

// One candidate config of a sweep; `key` is a stable string of the config point,
// unique per sweep, so a resumed sweep finds its trials again.
struct TrialRow {
  int64_t id = 0;  // store
  int64_t sweep_id = 0;
  std::string key;
  std::string config_json = "{}";
  TrialStatus status = TrialStatus::pending;
  std::string reason;  // why it failed / what it measured
  std::optional<double> metric;
  std::optional<double> tokens_per_s;
  std::optional<double> samples_per_s;
  std::optional<double> flops_per_s;
  std::optional<double> latency_ms;  // per step
  std::optional<uint64_t> predicted_mem_bytes;
  std::optional<uint64_t> peak_mem_bytes;
  std::optional<double> predicted_step_ms;
  std::optional<double> wall_s;
  std::string output_tail;
  std::optional<int64_t> run_id;     // the run the trial process wrote, if any
  std::optional<StepSpread> spread;  // ok trials measured from per-step times
  bool noisy = false;     // still over the tuner's dispersion threshold after its re-measurements
  int attempts = 1;       // measurements taken (1 + re-measurements)
  double created_at = 0;  // store
  double updated_at = 0;  // store

  friend bool operator==(const TrialRow&, const TrialRow&) = default;
};

// A confirmation run: candidates whose measurements were within noise of the
// best, run again interleaved, and what that decided.
struct TieBreak {
  int64_t id = 0;  // store
  int64_t sweep_id = 0;
  double created_at = 0;               // store
  std::string candidates_json = "[]";  // per candidate: key, first and confirmed figures
  int rounds = 0;
  std::string winner_key;
  bool decided = false;  // false: still within noise after confirmation (a tie)
  std::string summary;   // the line hybrid-tune printed

  friend bool operator==(const TieBreak&, const TieBreak&) = default;
};

// A candidate the memory model ruled out before running it.
struct PrunedCandidate {
  std::string key;
  std::string config_json = "{}";
  uint64_t predicted_mem_bytes = 0;
  uint64_t budget_bytes = 0;
  std::string reason;

  friend bool operator==(const PrunedCandidate&, const PrunedCandidate&) = default;
};

struct BandwidthSample {
  std::string op;
  uint64_t bytes = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::string link = "intra_host";  // link_name(): the probe's ranks on one host or several
  int ranks = 0;  // ranks of the collective (0: the probe's world_size, probes before schema v7)

  friend bool operator==(const BandwidthSample&, const BandwidthSample&) = default;
};

// What `hybrid-tune probe` measured on a machine: the cost model's inputs.
struct ProbeResult {
  int64_t id = 0;         // store
  double created_at = 0;  // store
  std::string host;
  std::string device;
  int world_size = 1;
  double gemm_flops_per_s = 0;  // per rank, all ranks of its host busy at once
  int gemm_ranks = 0;           // ranks sharing that host while it was measured (0: world_size)
  int host_cpus = 0;            // logical CPUs of that host (0: not recorded)
  std::vector<BandwidthSample> bandwidth;  // per op and message size

  friend bool operator==(const ProbeResult&, const ProbeResult&) = default;
};

}  // namespace hybrid::profiler
