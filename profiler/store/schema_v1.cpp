#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v1: runs and everything a training run writes.
const char* const kSchemaV1 = R"sql(
CREATE TABLE runs (
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
                 CHECK (status IN ('running','ok','failed','oom','config_error','killed')),
  error          TEXT    NOT NULL DEFAULT '',
  summary_json   TEXT    NOT NULL DEFAULT '{}',
  writer_pid     INTEGER NOT NULL DEFAULT 0,
  writer_host    TEXT    NOT NULL DEFAULT '',
  writer_start   INTEGER NOT NULL DEFAULT -1,
  last_update    REAL    NOT NULL
);
CREATE INDEX runs_by_status ON runs(status);

CREATE TABLE run_ranks (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank          INTEGER NOT NULL,
  host          TEXT    NOT NULL,
  pid           INTEGER NOT NULL,
  epoch_unix_ns INTEGER NOT NULL,
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;

CREATE TABLE steps (
  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step         INTEGER NOT NULL,
  loss         REAL,
  lr           REAL    NOT NULL,
  loss_scale   REAL    NOT NULL,
  skipped      INTEGER NOT NULL CHECK (skipped IN (0, 1)),
  grad_norm    REAL,
  step_ms      REAL    NOT NULL,
  tokens_per_s REAL    NOT NULL,
  flops_per_s  REAL    NOT NULL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE step_ranks (
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step            INTEGER NOT NULL,
  rank            INTEGER NOT NULL,
  compute_ms      REAL    NOT NULL,
  comm_ms         REAL    NOT NULL,
  exposed_comm_ms REAL    NOT NULL,
  PRIMARY KEY (run_id, step, rank)
) WITHOUT ROWID;

CREATE TABLE modules (
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  module_id        INTEGER NOT NULL,
  parent_id        INTEGER,
  name             TEXT    NOT NULL,
  type             TEXT    NOT NULL,
  depth            INTEGER NOT NULL,
  n_params         INTEGER NOT NULL,
  activation_bytes INTEGER NOT NULL,
  PRIMARY KEY (run_id, module_id)
) WITHOUT ROWID;

CREATE TABLE layer_stats (
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank      INTEGER NOT NULL,
  module_id INTEGER NOT NULL,
  step      INTEGER NOT NULL,
  fwd_ns    INTEGER NOT NULL,
  bwd_ns    INTEGER NOT NULL,
  fwd_flops INTEGER NOT NULL,
  bwd_flops INTEGER NOT NULL,
  fwd_macs  INTEGER NOT NULL,
  bwd_macs  INTEGER NOT NULL,
  calls     INTEGER NOT NULL,
  PRIMARY KEY (run_id, rank, module_id, step)
) WITHOUT ROWID;

CREATE TABLE comm_stats (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank       INTEGER NOT NULL,
  op         TEXT    NOT NULL,
  bytes      INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  total_ns   INTEGER NOT NULL,
  min_ns     INTEGER NOT NULL,
  max_ns     INTEGER NOT NULL,
  algbw_gbps REAL    NOT NULL,
  busbw_gbps REAL    NOT NULL,
  PRIMARY KEY (run_id, rank, op, bytes)
) WITHOUT ROWID;

CREATE TABLE memory (
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank            INTEGER NOT NULL,
  category        TEXT    NOT NULL,
  current_bytes   INTEGER NOT NULL,
  peak_bytes      INTEGER NOT NULL,
  predicted_bytes INTEGER,
  PRIMARY KEY (run_id, rank, category)
) WITHOUT ROWID;

CREATE TABLE event_names (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);

CREATE TABLE events (
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank      INTEGER NOT NULL,
  step      INTEGER NOT NULL,
  lane      INTEGER NOT NULL,
  category  INTEGER NOT NULL,
  name_id   INTEGER NOT NULL REFERENCES event_names(id),
  module_id INTEGER NOT NULL,
  start_ns  INTEGER NOT NULL,
  dur_ns    INTEGER NOT NULL,
  bytes     INTEGER NOT NULL,
  flops     INTEGER NOT NULL
);
CREATE INDEX events_by_run_rank_step ON events(run_id, rank, step, start_ns);
)sql";

}  // namespace hybrid::profiler::store
