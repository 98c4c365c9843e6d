// The alpha–beta (latency–bandwidth) model of one collective on one link
// class, fitted to the probe's samples so collective times carry over to world
// sizes the probe never ran:
//
//   t(n bytes, P ranks) = alpha · steps(P) + n · bus_factor(P) / busbw
//
// steps(P) are a ring's sequential hops (all-reduce 2(P−1), reduce-scatter and
// all-gather P−1, broadcast P−1), the schedule NCCL and large-message MPI use;
// bus_factor is nccl-tests' (profiler/comm_tracer.h), so busbw is the link's
// rate, independent of P for a ring. busbw is fitted by least squares to the
// large messages (1 MiB and up), alpha is the median latency left in the small
// ones: a token-bucket shaper passes small messages at line rate, which a
// single fit over every size would take for the link's rate. Both terms are
// kept non-negative.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/comm_record.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

double ring_steps(profiler::CollectiveKind kind, int ranks);

struct AlphaBeta {
  std::string op;                // collective_name()
  std::string link;              // link_name()
  double alpha_s = 0;            // per ring step
  double busbw_bytes_per_s = 0;  // 0: no bandwidth term could be fitted
  int samples = 0;
  std::vector<int> ranks;    // the world sizes the samples were measured at
  double max_rel_error = 0;  // worst |fit − sample| / sample over the samples

  double time_s(uint64_t bytes, int world) const;
};

// One fit per (op, link) present in `samples`; a sample's ranks of 0 counts as
// `default_ranks` (probes stored before the per-sample rank count). Samples
// with a non-positive algbw are skipped.
std::vector<AlphaBeta> fit_alpha_beta(const std::vector<profiler::BandwidthSample>& samples,
                                      int default_ranks);

}  // namespace hybrid::autotune
