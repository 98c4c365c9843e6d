// What the cost model knows about the machine: GEMM FLOP/s per rank and
// collective times by message size, from the latest `hybrid-tune probe` in the
// run store, or conservative defaults when there is none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autotune/alpha_beta.h"
#include "kernels/ops.h"
#include "profiler/comm_record.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct ClusterRates {
  double gemm_flops_per_s = 0;  // per rank, all ranks of its host busy at once
  int gemm_ranks = 1;           // ranks that shared the host while that was measured
  // CPU ranks share their host's cores, so a rank's rate is the host's divided
  // by the ranks on it; a GPU rank has its device to itself.
  bool shared_cores = true;
  int host_cpus = 0;                                 // logical CPUs of a host (0: unknown)
  std::vector<profiler::BandwidthSample> bandwidth;  // per op and message size
  std::vector<AlphaBeta>
      fits;            // per op and link: fit_alpha_beta(bandwidth) (refit after changing it)
  int world_size = 1;  // ranks the bandwidths were measured with
  double memory_bytes_per_s = 0;  // streaming bandwidth per rank (not probed)
  double op_overhead_s = 0;       // fixed cost of one kernel / op call
  std::string source;             // "probe 3 of host (2 ranks)", "defaults"
  // The link the trials' collectives cross: only samples of this class count
  // (any class when the probe has none of it).
  std::string link = "intra_host";
  // Ranks on each host in the runs being predicted (0: as in the GEMM measurement).
  int ranks_per_host = 0;

  // Seconds for one collective of `bytes` (nccl-tests' message size) over
  // `world` ranks (0: as measured). At a world size the probe measured: its
  // times interpolated in log-log between measured sizes, the smallest size's
  // time below them (latency bound), proportional above them. At any other:
  // the alpha–beta fit of this op and link (of all-reduce when the op was
  // not probed).
  double collective_s(profiler::CollectiveKind kind, uint64_t bytes, int world = 0) const;
  // GEMM FLOP/s of one rank with `ranks_per_host` ranks on its host.
  double rank_flops_per_s() const;
  // How much more CPU time-sharing the runs see than the probe did: ranks
  // beyond the host's CPUs take turns, and a collective's copies and its
  // ring steps wait for every rank to be scheduled (1: no more than measured).
  double oversubscription() const;
};

ClusterRates rates_from_probe(const profiler::ProbeResult& probe, kernels::BackendKind kind);
ClusterRates default_rates(kernels::BackendKind kind, int world_size);

}  // namespace hybrid::autotune
