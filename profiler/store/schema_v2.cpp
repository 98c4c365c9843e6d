#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v2: the autotuner's sweeps, trials (pointing at runs), pruned candidates, probes.
const char* const kSchemaV2 = R"sql(
CREATE TABLE sweeps (
  id               INTEGER PRIMARY KEY,
  name             TEXT NOT NULL DEFAULT '',
  base_config_json TEXT NOT NULL DEFAULT '{}',
  space_json       TEXT NOT NULL DEFAULT '{}',
  strategy         TEXT NOT NULL DEFAULT '',
  metric           TEXT NOT NULL DEFAULT '',
  status           TEXT NOT NULL DEFAULT 'running'
                   CHECK (status IN ('running','done','failed','stopped')),
  created_at       REAL NOT NULL,
  finished_at      REAL
);

CREATE TABLE trials (
  id                  INTEGER PRIMARY KEY,
  sweep_id            INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  key                 TEXT    NOT NULL,
  config_json         TEXT    NOT NULL DEFAULT '{}',
  status              TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending','running','ok','oom','timeout','crash',
                                        'config_error','failed')),
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
  UNIQUE (sweep_id, key)
);
CREATE INDEX trials_by_run ON trials(run_id);

CREATE TABLE pruned (
  sweep_id            INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  key                 TEXT    NOT NULL,
  config_json         TEXT    NOT NULL DEFAULT '{}',
  predicted_mem_bytes INTEGER NOT NULL,
  budget_bytes        INTEGER NOT NULL,
  reason              TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (sweep_id, key)
) WITHOUT ROWID;

CREATE TABLE probes (
  id               INTEGER PRIMARY KEY,
  created_at       REAL    NOT NULL,
  host             TEXT    NOT NULL,
  device           TEXT    NOT NULL DEFAULT '',
  world_size       INTEGER NOT NULL,
  gemm_flops_per_s REAL    NOT NULL
);
CREATE INDEX probes_by_host ON probes(host, created_at);

CREATE TABLE probe_bandwidth (
  probe_id   INTEGER NOT NULL REFERENCES probes(id) ON DELETE CASCADE,
  op         TEXT    NOT NULL,
  bytes      INTEGER NOT NULL,
  algbw_gbps REAL    NOT NULL,
  busbw_gbps REAL    NOT NULL,
  PRIMARY KEY (probe_id, op, bytes)
) WITHOUT ROWID;
)sql";

}  // namespace hybrid::profiler::store
