// The collectives window as data: one row per (op, message size) over the ranks
// (calls, latency, algbw, busbw, nccl-tests conventions), and per step the time
// collectives were in flight against the part the compute lane waited for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gui/model/stats.h"
#include "profiler/profile_data.h"
#include "profiler/tables/pipeline_bubbles.h"

namespace hybrid::gui {

struct CommRow {
  std::string op;
  std::string link = "intra_host";  // or "inter_host": its ranks spanned hosts
  std::string group = "world";      // communicator group: "world", "dp", "pp", "tied", "tp"
  uint64_t bytes = 0;               // message size
  int ranks = 0;                    // ranks that issued it
  double calls = 0;                 // per rank (mean)
  Spread latency_ms;                // mean latency of a call, over ranks
  double min_ms = 0;                // fastest call on any rank
  double max_ms = 0;                // slowest call on any rank
  Spread total_ms;                  // time in this op per rank
  double algbw_gbps = 0;            // mean over ranks
  double busbw_gbps = 0;
};

struct CommStepRow {
  int64_t step = 0;
  Spread comm_ms;     // collectives in flight, per rank
  Spread exposed_ms;  // compute lane waiting, per rank
};

struct CommSummary {
  std::vector<CommRow> rows;                   // by op, then group, link, size
  std::vector<profiler::StageBubble> bubbles;  // by pipeline stage; empty without a pipeline
  std::vector<CommStepRow> steps;
  double comm_ms_per_step = 0;     // mean over steps and ranks
  double exposed_ms_per_step = 0;  // mean over steps and ranks
  // 1 − exposed / total: the part of communication hidden behind compute.
  double hidden_fraction() const {
    return comm_ms_per_step > 0 ? 1.0 - exposed_ms_per_step / comm_ms_per_step : 0.0;
  }
};

CommSummary build_comm_summary(const profiler::RunProfile& profile);

enum class CommColumn { op, bytes, calls, latency, min, max, total, algbw, busbw };

// Sorts rows by the column (ties keep op, size order).
void sort_comm_rows(std::vector<CommRow>& rows, CommColumn column, bool ascending);

}  // namespace hybrid::gui
