#include <string>

#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

namespace {

// `trials` up to its status CHECK, whose statuses each rebuild completes.
constexpr const char* kTrialsHead = R"sql(  id                  INTEGER PRIMARY KEY,
  sweep_id            INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  key                 TEXT    NOT NULL,
  config_json         TEXT    NOT NULL DEFAULT '{}',
  status              TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending','running','ok','oom','timeout','crash',
                                        'config_error','failed','node_failure','cancelled')sql";

// The columns after `status`: v5's, in their order.
constexpr const char* kTrialsTail = R"sql()),
  reason              TEXT    NOT NULL DEFAULT '',
  metric              REAL,
  tokens_per_s        REAL,
  samples_per_s       REAL,
  flops_per_s         REAL,
  latency_ms          REAL,
  predicted_mem_bytes INTEGER,
  peak_mem_bytes      INTEGER,
  predicted_step_ms   REAL,
  wall_s              REAL,
  output_tail         TEXT    NOT NULL DEFAULT '',
  run_id              INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  created_at          REAL    NOT NULL,
  updated_at          REAL    NOT NULL,
  step_count          INTEGER,
  step_median_ms      REAL,
  step_q1_ms          REAL,
  step_q3_ms          REAL,
  step_mad_ms         REAL,
  step_cv             REAL,
  step_ci_low_ms      REAL,
  step_ci_high_ms     REAL,
  noisy               INTEGER NOT NULL DEFAULT 0 CHECK (noisy IN (0, 1)),
  attempts            INTEGER NOT NULL DEFAULT 1,
  UNIQUE (sweep_id, key)
)sql";

constexpr const char* kSchemaV6Ranks = R"sql(
ALTER TABLE run_ranks ADD COLUMN local_rank INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_ranks ADD COLUMN local_size INTEGER NOT NULL DEFAULT 1;
ALTER TABLE run_ranks ADD COLUMN threads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_ranks ADD COLUMN host_memory_bytes INTEGER NOT NULL DEFAULT 0;

CREATE TABLE comm_stats_v6 (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank       INTEGER NOT NULL,
  op         TEXT    NOT NULL,
  bytes      INTEGER NOT NULL,
  link       TEXT    NOT NULL DEFAULT 'intra_host' CHECK (link IN ('intra_host', 'inter_host')),
  count      INTEGER NOT NULL,
  total_ns   INTEGER NOT NULL,
  min_ns     INTEGER NOT NULL,
  max_ns     INTEGER NOT NULL,
  algbw_gbps REAL    NOT NULL,
  busbw_gbps REAL    NOT NULL,
  PRIMARY KEY (run_id, rank, op, link, bytes)
) WITHOUT ROWID;
INSERT INTO comm_stats_v6 (run_id, rank, op, bytes, count, total_ns, min_ns, max_ns, algbw_gbps,
                           busbw_gbps)
  SELECT run_id, rank, op, bytes, count, total_ns, min_ns, max_ns, algbw_gbps, busbw_gbps
  FROM comm_stats;
DROP TABLE comm_stats;
ALTER TABLE comm_stats_v6 RENAME TO comm_stats;

)sql";

constexpr const char* kSchemaV6Probes = R"sql(
CREATE TABLE probe_bandwidth_v6 (
  probe_id   INTEGER NOT NULL REFERENCES probes(id) ON DELETE CASCADE,
  op         TEXT    NOT NULL,
  bytes      INTEGER NOT NULL,
  link       TEXT    NOT NULL DEFAULT 'intra_host' CHECK (link IN ('intra_host', 'inter_host')),
  algbw_gbps REAL    NOT NULL,
  busbw_gbps REAL    NOT NULL,
  PRIMARY KEY (probe_id, op, link, bytes)
) WITHOUT ROWID;
INSERT INTO probe_bandwidth_v6 (probe_id, op, bytes, algbw_gbps, busbw_gbps)
  SELECT probe_id, op, bytes, algbw_gbps, busbw_gbps FROM probe_bandwidth;
DROP TABLE probe_bandwidth;
ALTER TABLE probe_bandwidth_v6 RENAME TO probe_bandwidth;
)sql";

}  // namespace

// SQLite cannot change a CHECK in place: `trials` is rebuilt, with the same
// columns in the same order (INSERT ... SELECT * relies on it).
std::string rebuild_trials(int version, std::string_view more_statuses) {
  const std::string name = "trials_v" + std::to_string(version);
  return "CREATE TABLE " + name + " (\n" + kTrialsHead + std::string(more_statuses) + kTrialsTail +
         ");\nINSERT INTO " + name + " SELECT * FROM trials;\nDROP TABLE trials;\nALTER TABLE " +
         name + " RENAME TO trials;\nCREATE INDEX trials_by_run ON trials(run_id);\n";
}

// v6: runs across hosts. Each rank's place on its host and the host's threads
// and memory; collective statistics per link class (whether the collective's
// ranks spanned hosts), which joins the key (runs before v6 ran on one host);
// trials that lost a host end as node_failure, and ones a scheduler cancelled
// as cancelled (the table is rebuilt for its CHECK, columns in their v5
// order); probe bandwidth per link class too.
std::string schema_v6() { return kSchemaV6Ranks + rebuild_trials(6, "") + kSchemaV6Probes; }

}  // namespace hybrid::profiler::store
