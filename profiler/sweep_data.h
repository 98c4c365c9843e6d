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
  failed
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
  std::optional<int64_t> run_id;  // the run the trial process wrote, if any
  double created_at = 0;          // store
  double updated_at = 0;          // store

  friend bool operator==(const TrialRow&, const TrialRow&) = default;
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

  friend bool operator==(const BandwidthSample&, const BandwidthSample&) = default;
};

// What `hybrid-tune probe` measured on a machine: the cost model's inputs.
struct ProbeResult {
  int64_t id = 0;         // store
  double created_at = 0;  // store
  std::string host;
  std::string device;
  int world_size = 1;
  double gemm_flops_per_s = 0;
  std::vector<BandwidthSample> bandwidth;  // per op and message size

  friend bool operator==(const ProbeResult&, const ProbeResult&) = default;
};

}  // namespace hybrid::profiler
