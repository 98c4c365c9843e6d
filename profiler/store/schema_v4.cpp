#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v4: DeepSpeed's wall-clock timers per step and rank (wall_clock_breakdown), and
// activation checkpointing: a module's forward run again in backward (event
// category recompute, 9) gets its own layer-stats columns, so fwd/bwd stay what a
// run without checkpointing shows.
const char* const kSchemaV4 = R"sql(
CREATE TABLE step_timers (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  rank   INTEGER NOT NULL,
  name   TEXT    NOT NULL,
  ms     REAL    NOT NULL,
  PRIMARY KEY (run_id, step, rank, name)
) WITHOUT ROWID;
ALTER TABLE layer_stats ADD COLUMN recompute_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE layer_stats ADD COLUMN recompute_flops INTEGER NOT NULL DEFAULT 0;
ALTER TABLE layer_stats ADD COLUMN host_recompute_ns INTEGER NOT NULL DEFAULT 0;
)sql";

}  // namespace hybrid::profiler::store
