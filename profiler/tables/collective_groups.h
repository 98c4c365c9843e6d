// Collectives grouped by (op, message size) over the ranks, and per step the time
// collectives were in flight against the part the compute lane waited for: the
// tables of the communication report and of the viewer's collectives window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/profile_data.h"
#include "profiler/spread.h"

namespace hybrid::profiler {

// One (op, communicator group, link class, size) over every rank that issued it; per-rank vectors
// hold one entry per stored row (one row per rank), in the store's order.
struct CollectiveGroup {
  std::string op;
  std::string comm_group = "world";  // "world", "dp", "pp", "tied", "tp" (CommStatRow::group)
  std::string link;                  // "intra_host" or "inter_host" (CommStatRow::link)
  uint64_t bytes = 0;                // message size
  int ranks = 0;                     // distinct ranks that issued it
  int64_t count = 0;                 // calls, all ranks together
  int64_t total_ns = 0;
  int64_t min_ns = 0;                          // fastest call on any rank
  int64_t max_ns = 0;                          // slowest call on any rank
  std::vector<double> calls;                   // per rank
  std::vector<double> total_ms;                // time in this op, per rank
  std::vector<double> latency_ms;              // mean latency of a call, per rank
  std::vector<double> algbw_gbps, busbw_gbps;  // per rank
  double algbw_mean = 0, algbw_min = 0;        // over ranks
  double busbw_mean = 0, busbw_min = 0;
};

// By op, then communicator group, link class (intra-host first), size.
std::vector<CollectiveGroup> group_collectives(const RunProfile& profile);

// Every collective (not the offload I/O) of one link class, per rank: what the
// report's split into intra- and inter-host bandwidth is made of.
struct LinkTotals {
  std::string link;
  int ranks = 0;          // ranks that issued any
  double calls = 0;       // per rank
  double bytes = 0;       // message bytes per rank
  double ns = 0;          // time in them per rank
  double busbw_mean = 0;  // call-weighted mean of the per-rank busbw
  double algbw() const { return ns > 0 ? bytes / ns : 0.0; }  // GB/s
};
std::vector<LinkTotals> link_totals(const std::vector<CollectiveGroup>& groups);  // intra first

// One step over the ranks that recorded it (StepRankRow, one entry per rank).
struct StepComm {
  int64_t step = 0;
  int ranks = 0;
  Spread compute_ms, comm_ms, exposed_ms;
  double comm_sum_ms = 0, exposed_sum_ms = 0;  // over ranks
  // The part of communication hidden behind compute: 1 − exposed / comm.
  double hidden_fraction() const {
    return comm_sum_ms > 0 ? 1.0 - exposed_sum_ms / comm_sum_ms : 0.0;
  }
};

struct CommSteps {
  std::vector<StepComm> steps;  // by step
  double comm_ms = 0;           // Σ over steps of the rank mean
  double exposed_ms = 0;
};

CommSteps comm_per_step(const RunProfile& profile);

}  // namespace hybrid::profiler
