#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v3: the GPU timeline. Where a run came from (our engine, or an imported
// PyTorch profiler trace); the CPU scope that launched each GPU record; host
// (launch) times beside the layer times, which are device times on a GPU; the
// per-rank GPU-timeline analysis (docs/profiler.md).
const char* const kSchemaV3 = R"sql(
ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'hybrid';
ALTER TABLE events ADD COLUMN scope INTEGER NOT NULL DEFAULT 8;
ALTER TABLE layer_stats ADD COLUMN host_fwd_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE layer_stats ADD COLUMN host_bwd_ns INTEGER NOT NULL DEFAULT 0;
UPDATE layer_stats SET host_fwd_ns = fwd_ns, host_bwd_ns = bwd_ns;

CREATE TABLE gpu_timeline (
  run_id                INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank                  INTEGER NOT NULL,
  first_start_ns        INTEGER NOT NULL,
  last_end_ns           INTEGER NOT NULL,
  idle_ns               INTEGER NOT NULL,
  compute_ns            INTEGER NOT NULL,
  non_compute_ns        INTEGER NOT NULL,
  comm_ns               INTEGER NOT NULL,
  memory_ns             INTEGER NOT NULL,
  comm_overlap_ns       INTEGER NOT NULL,
  computation_only_ns   INTEGER NOT NULL,
  communication_only_ns INTEGER NOT NULL,
  computation_communication_ns INTEGER NOT NULL,
  memory_only_ns        INTEGER NOT NULL,
  computation_memory_ns INTEGER NOT NULL,
  communication_memory_ns INTEGER NOT NULL,
  all_three_ns          INTEGER NOT NULL,
  computation_kernels   INTEGER NOT NULL,
  communication_kernels INTEGER NOT NULL,
  memory_records        INTEGER NOT NULL,
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;
)sql";

}  // namespace hybrid::profiler::store
