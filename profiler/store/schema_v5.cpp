#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v5: noise in the tuner. Each trial's spread of measured step times (median,
// quartiles, MAD, CV, the median's 95 % interval), whether it stayed noisy after
// its re-measurements, and how many times it ran; the confirmation runs that
// broke ties between winners within noise.
const char* const kSchemaV5 = R"sql(
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
)sql";

}  // namespace hybrid::profiler::store
