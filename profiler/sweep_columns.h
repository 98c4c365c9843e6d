// The column tables of the autotuner's rows (profiler/sweep_data.h): one per
// table of the run store (profiler/columns.h says what follows from them).
// Ids the store assigns, and the sweep or probe a pruned candidate or a
// bandwidth sample belongs to, are bound by the store's code.
#pragma once

#include <tuple>

#include "profiler/columns.h"
#include "profiler/sweep_data.h"

namespace hybrid::profiler::columns {

template <>
struct Table<SweepInfo> {
  static constexpr const char* name = "sweeps";
  static constexpr auto columns = std::tuple{
      member("name", &SweepInfo::name),
      member("base_config_json", &SweepInfo::base_config_json),
      member("space_json", &SweepInfo::space_json),
      member("strategy", &SweepInfo::strategy),
      member("metric", &SweepInfo::metric),
      member("status", &SweepInfo::status),
      member("created_at", &SweepInfo::created_at),
      member("finished_at", &SweepInfo::finished_at),
  };
};

// The step-time spread is NULL throughout for a trial without one.
template <>
struct Table<TrialRow> {
  using T = TrialRow;
  using S = StepSpread;
  static constexpr const char* name = "trials";
  static constexpr auto columns = std::tuple{
      member("sweep_id", &T::sweep_id),
      member("key", &T::key),
      member("config_json", &T::config_json),
      member("status", &T::status),
      member("reason", &T::reason),
      member("metric", &T::metric),
      member("tokens_per_s", &T::tokens_per_s),
      member("samples_per_s", &T::samples_per_s),
      member("flops_per_s", &T::flops_per_s),
      member("latency_ms", &T::latency_ms),
      member("predicted_mem_bytes", &T::predicted_mem_bytes),
      member("peak_mem_bytes", &T::peak_mem_bytes),
      member("predicted_step_ms", &T::predicted_step_ms),
      member("wall_s", &T::wall_s),
      member("output_tail", &T::output_tail),
      member("run_id", &T::run_id),
      member("created_at", &T::created_at),
      member("updated_at", &T::updated_at),
      in_optional("step_count", &T::spread, &S::count, /*opens=*/true),
      in_optional("step_median_ms", &T::spread, &S::median_ms),
      in_optional("step_q1_ms", &T::spread, &S::q1_ms),
      in_optional("step_q3_ms", &T::spread, &S::q3_ms),
      in_optional("step_mad_ms", &T::spread, &S::mad_ms),
      in_optional("step_cv", &T::spread, &S::cv),
      in_optional("step_ci_low_ms", &T::spread, &S::ci_low_ms),
      in_optional("step_ci_high_ms", &T::spread, &S::ci_high_ms),
      member("noisy", &T::noisy),
      member("attempts", &T::attempts),
  };
};

template <>
struct Table<TieBreak> {
  static constexpr const char* name = "tie_breaks";
  static constexpr auto columns = std::tuple{
      member("sweep_id", &TieBreak::sweep_id),
      member("created_at", &TieBreak::created_at),
      member("candidates_json", &TieBreak::candidates_json),
      member("rounds", &TieBreak::rounds),
      member("winner_key", &TieBreak::winner_key),
      member("decided", &TieBreak::decided),
      member("summary", &TieBreak::summary),
  };
};

template <>
struct Table<PrunedCandidate> {
  static constexpr const char* name = "pruned";
  static constexpr auto columns = std::tuple{
      member("key", &PrunedCandidate::key),
      member("config_json", &PrunedCandidate::config_json),
      member("predicted_mem_bytes", &PrunedCandidate::predicted_mem_bytes),
      member("budget_bytes", &PrunedCandidate::budget_bytes),
      member("reason", &PrunedCandidate::reason),
  };
};

// Without its bandwidth samples: a table of their own.
template <>
struct Table<ProbeResult> {
  static constexpr const char* name = "probes";
  static constexpr auto columns = std::tuple{
      member("created_at", &ProbeResult::created_at),
      member("host", &ProbeResult::host),
      member("device", &ProbeResult::device),
      member("world_size", &ProbeResult::world_size),
      member("gemm_flops_per_s", &ProbeResult::gemm_flops_per_s),
      member("gemm_ranks", &ProbeResult::gemm_ranks),
      member("host_cpus", &ProbeResult::host_cpus),
  };
};

template <>
struct Table<BandwidthSample> {
  static constexpr const char* name = "probe_bandwidth";
  static constexpr auto columns = std::tuple{
      member("op", &BandwidthSample::op),
      member("bytes", &BandwidthSample::bytes),
      member("algbw_gbps", &BandwidthSample::algbw_gbps),
      member("busbw_gbps", &BandwidthSample::busbw_gbps),
      member("link", &BandwidthSample::link),
      member("ranks", &BandwidthSample::ranks),
  };
};

}  // namespace hybrid::profiler::columns
