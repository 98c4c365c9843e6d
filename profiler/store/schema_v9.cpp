#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v9: a run's status and a trial's may be `diverged` (it ran its steps, but its
// loss went NaN or infinite: engine/divergence.h). SQLite cannot change a CHECK
// in place, so `runs` and `trials` are rebuilt with the same columns in the same
// order; prepare_schema runs
// migrations with foreign keys off, so the rows that point at runs stay (a DROP
// of `runs` would otherwise delete them by cascade), and checks them after.
const char* const kSchemaV9 = R"sql(
CREATE TABLE runs_v9 (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL DEFAULT '',
  config_json    TEXT    NOT NULL DEFAULT '{}',
  host           TEXT    NOT NULL DEFAULT '',
  device         TEXT    NOT NULL DEFAULT '',
  backend        TEXT    NOT NULL DEFAULT '',
  world_size     INTEGER NOT NULL DEFAULT 1,
  dtype          TEXT    NOT NULL DEFAULT '',
  zero_stage     INTEGER NOT NULL DEFAULT 0,
  micro_batch    INTEGER NOT NULL DEFAULT 0,
  grad_accum     INTEGER NOT NULL DEFAULT 1,
  seq_len        INTEGER NOT NULL DEFAULT 0,
  n_params       INTEGER NOT NULL DEFAULT 0,
  git_revision   TEXT    NOT NULL DEFAULT '',
  hybrid_version TEXT    NOT NULL DEFAULT '',
  started_at     REAL    NOT NULL,
  finished_at    REAL,
  status         TEXT    NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running','ok','failed','oom','config_error','killed',
                                   'diverged')),
  error          TEXT    NOT NULL DEFAULT '',
  summary_json   TEXT    NOT NULL DEFAULT '{}',
  writer_pid     INTEGER NOT NULL DEFAULT 0,
  writer_host    TEXT    NOT NULL DEFAULT '',
  writer_start   INTEGER NOT NULL DEFAULT -1,
  last_update    REAL    NOT NULL,
  source         TEXT    NOT NULL DEFAULT 'hybrid'
);
INSERT INTO runs_v9 SELECT * FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v9 RENAME TO runs;
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE trials_v9 (
  id                  INTEGER PRIMARY KEY,
  sweep_id            INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  key                 TEXT    NOT NULL,
  config_json         TEXT    NOT NULL DEFAULT '{}',
  status              TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending','running','ok','oom','timeout','crash',
                                        'config_error','failed','node_failure','cancelled',
                                        'diverged')),
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
);
INSERT INTO trials_v9 SELECT * FROM trials;
DROP TABLE trials;
ALTER TABLE trials_v9 RENAME TO trials;
CREATE INDEX trials_by_run ON trials(run_id);
)sql";

}  // namespace hybrid::profiler::store
