#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v8: pipeline parallelism. Collective statistics per communicator group
// (world, dp, pp, tied, tp), which joins the key (runs before v8 issued every
// collective on the world communicator); each rank's pipeline stage (0 without
// pipeline stages); each step's pipeline bubble per rank: the time its compute
// thread waited on pipeline transfers (0 without pipeline stages).
const char* const kSchemaV8 = R"sql(
ALTER TABLE run_ranks ADD COLUMN pipeline_stage INTEGER NOT NULL DEFAULT 0
  CHECK (pipeline_stage >= 0);
ALTER TABLE step_ranks ADD COLUMN bubble_ms REAL NOT NULL DEFAULT 0;

CREATE TABLE comm_stats_v8 (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank       INTEGER NOT NULL,
  op         TEXT    NOT NULL,
  bytes      INTEGER NOT NULL,
  link       TEXT    NOT NULL DEFAULT 'intra_host' CHECK (link IN ('intra_host', 'inter_host')),
  "group"    TEXT    NOT NULL DEFAULT 'world' CHECK ("group" <> ''),
  count      INTEGER NOT NULL,
  total_ns   INTEGER NOT NULL,
  min_ns     INTEGER NOT NULL,
  max_ns     INTEGER NOT NULL,
  algbw_gbps REAL    NOT NULL,
  busbw_gbps REAL    NOT NULL,
  PRIMARY KEY (run_id, rank, op, "group", link, bytes)
) WITHOUT ROWID;
INSERT INTO comm_stats_v8 (run_id, rank, op, bytes, link, count, total_ns, min_ns, max_ns,
                           algbw_gbps, busbw_gbps)
  SELECT run_id, rank, op, bytes, link, count, total_ns, min_ns, max_ns, algbw_gbps, busbw_gbps
  FROM comm_stats;
DROP TABLE comm_stats;
ALTER TABLE comm_stats_v8 RENAME TO comm_stats;
)sql";

}  // namespace hybrid::profiler::store
