// The run store across machines: SQLite's WAL index is shared memory, so only
// ranks on rank 0's machine open the store. The others hand their rows
// (profiler/rank_rows.h) to rank 0 over the host communicator, and rank 0
// stores them as if each rank had written its own.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/comm/communicator.h"
#include "profiler/rank_rows.h"

namespace hybrid::profiler {
class RunStore;
}

namespace hybrid::engine {

// The ranks whose rows rank 0 stores: those on another machine than rank 0's.
std::vector<int> ranks_away_from_rank0(const comm::Placement& placement);

// Every rank calls it at the same point, after its other collectives of the
// run. Each rank away from rank 0 sends rank 0 the size of its encoded rows,
// then the bytes (point to point); rank 0 receives them in rank order (the
// same list on every rank), decodes them and stores them in `store` (run
// `run_id`), one transaction per rank. Other ranks do nothing. Rank 0 rethrows
// a failed write only after the last receive, so no sender is left waiting.
// Returns how many ranks' rows rank 0 stored (0 elsewhere).
int forward_rank_rows(comm::Communicator& comm, profiler::RunStore* store, int64_t run_id,
                      const profiler::RankRows& mine);

}  // namespace hybrid::engine
