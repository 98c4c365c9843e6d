// What the cost model knows about the machine: GEMM FLOP/s per rank and
// collective times by message size, from the latest `hybrid-tune probe` in the
// run store, or conservative defaults when there is none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "profiler/comm_record.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct ClusterRates {
  double gemm_flops_per_s = 0;                       // per rank, all ranks busy at once
  std::vector<profiler::BandwidthSample> bandwidth;  // per op and message size
  int world_size = 1;                                // ranks the bandwidths were measured with
  double memory_bytes_per_s = 0;                     // streaming bandwidth per rank (not probed)
  double op_overhead_s = 0;                          // fixed cost of one kernel / op call
  std::string source;                                // "probe 3 of host (2 ranks)", "defaults"
  // The link the trials' collectives cross: only samples of this class count
  // (any class when the probe has none of it).
  std::string link = "intra_host";

  // Seconds for one collective of `bytes` (nccl-tests' message size): the
  // probe's times interpolated in log-log between measured sizes, the smallest
  // size's time below them (latency bound), proportional above them.
  double collective_s(profiler::CollectiveKind kind, uint64_t bytes) const;
};

ClusterRates rates_from_probe(const profiler::ProbeResult& probe, kernels::BackendKind kind);
ClusterRates default_rates(kernels::BackendKind kind, int world_size);

}  // namespace hybrid::autotune
