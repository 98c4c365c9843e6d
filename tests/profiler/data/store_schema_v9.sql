-- Frozen copy of what a schema-version-9 build of hybrid wrote (profiler/store/schema.cpp,
-- migrations 1 to 9). Never edit: the migration tests open it with the current code.
PRAGMA application_id = 1213809234;
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
ALTER TABLE trials ADD COLUMN step_count INTEGER;
ALTER TABLE trials ADD COLUMN step_median_ms REAL;
ALTER TABLE trials ADD COLUMN step_q1_ms REAL;
ALTER TABLE trials ADD COLUMN step_q3_ms REAL;
ALTER TABLE trials ADD COLUMN step_mad_ms REAL;
ALTER TABLE trials ADD COLUMN step_cv REAL;
ALTER TABLE trials ADD COLUMN step_ci_low_ms REAL;
ALTER TABLE trials ADD COLUMN step_ci_high_ms REAL;
ALTER TABLE trials ADD COLUMN noisy INTEGER NOT NULL DEFAULT 0 CHECK (noisy IN (0, 1));
ALTER TABLE trials ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;

CREATE TABLE tie_breaks (
  id              INTEGER PRIMARY KEY,
  sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  created_at      REAL    NOT NULL,
  candidates_json TEXT    NOT NULL,
  rounds          INTEGER NOT NULL,
  winner_key      TEXT    NOT NULL,
  decided         INTEGER NOT NULL CHECK (decided IN (0, 1)),
  summary         TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX tie_breaks_by_sweep ON tie_breaks(sweep_id);
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

CREATE TABLE trials_v6 (
  id                  INTEGER PRIMARY KEY,
  sweep_id            INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  key                 TEXT    NOT NULL,
  config_json         TEXT    NOT NULL DEFAULT '{}',
  status              TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending','running','ok','oom','timeout','crash',
                                        'config_error','failed','node_failure','cancelled')),
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
INSERT INTO trials_v6 SELECT * FROM trials;
DROP TABLE trials;
ALTER TABLE trials_v6 RENAME TO trials;
CREATE INDEX trials_by_run ON trials(run_id);

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
ALTER TABLE probe_bandwidth ADD COLUMN ranks INTEGER NOT NULL DEFAULT 0 CHECK (ranks >= 0);
ALTER TABLE probes ADD COLUMN gemm_ranks INTEGER NOT NULL DEFAULT 0 CHECK (gemm_ranks >= 0);
ALTER TABLE probes ADD COLUMN host_cpus INTEGER NOT NULL DEFAULT 0 CHECK (host_cpus >= 0);
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
PRAGMA user_version = 9;
