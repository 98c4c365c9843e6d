#include <string>

#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

namespace {

constexpr const char* kSchemaV9Runs = R"sql(
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
)sql";

}  // namespace

// v9: a run's status and a trial's may be `diverged` (it ran its steps, but its
// loss went NaN or infinite: engine/divergence.h). SQLite cannot change a CHECK
// in place, so `runs` and `trials` are rebuilt with the same columns in the same
// order; prepare_schema runs migrations with foreign keys off, so the rows that
// point at runs stay (a DROP of `runs` would otherwise delete them by cascade),
// and checks them after.
std::string schema_v9() {
  return kSchemaV9Runs + rebuild_trials(9, ",\n                                        'diverged'");
}

}  // namespace hybrid::profiler::store
