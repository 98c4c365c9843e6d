// Every row one rank of a training run writes to the run store, in one value,
// and a compact binary encoding of it. Ranks on another machine than rank 0's
// cannot open the store (SQLite's WAL index is shared memory), so they encode
// their rows and hand them to rank 0 over the host communicator; rank 0 stores
// them with RunStore::add_rank_rows, as the rank would have.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

struct RankRows {
  RankInfo rank;                          // host and pid are the sending process's, stored as given
  std::vector<StepRankRow> step_ranks;    // in write order: a later row replaces an earlier one
  std::vector<StepTimerRow> step_timers;  // of the same step (GPU accounting over host rows)
  std::vector<LayerStat> layers;
  std::vector<GpuRankTimeline> gpu;
  EventSet events;
  std::vector<CommStatRow> comm;
  std::vector<MemoryRow> memory;
};

// Little-endian, fixed-width fields, strings and lists length-prefixed, behind
// a magic and a version: both ends are the same build, but a mismatch or a
// damaged buffer must fail loudly, never store garbage.
std::string encode_rank_rows(const RankRows& rows);
// Throws std::invalid_argument naming what is wrong (magic, version, which part
// is truncated, bytes left over).
RankRows decode_rank_rows(std::string_view bytes);

}  // namespace hybrid::profiler
