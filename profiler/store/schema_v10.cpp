#include "profiler/store/schema_migrations.h"

namespace hybrid::profiler::store {

// v10: generation runs (profiler/generation_data.h). A run's rows of measured
// generation: hybrid-generate's one call (`generate`) or its llama-bench tests
// (`bench`, pp N and tg N, the mean and standard deviation over repetitions),
// hybrid-train's rollout steps (`rollout`, with the step's breakdown). A
// percentile group and the breakdown columns are NULL where a row has none.
const char* const kSchemaV10 = R"sql(
CREATE TABLE generations (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind            TEXT    NOT NULL CHECK (kind IN ('generate', 'bench', 'rollout')),
  test            TEXT    NOT NULL DEFAULT '' CHECK ((kind = 'bench') = (test <> '')),
  model           TEXT    NOT NULL DEFAULT '',
  dtype           TEXT    NOT NULL DEFAULT '',
  batch           INTEGER NOT NULL CHECK (batch >= 1),
  prompts         INTEGER NOT NULL CHECK (prompts >= 0),
  prompt_tokens   INTEGER NOT NULL CHECK (prompt_tokens >= 0),
  new_tokens      INTEGER NOT NULL CHECK (new_tokens >= 0),
  repetitions     INTEGER NOT NULL DEFAULT 1 CHECK (repetitions >= 1),
  ttft_p50_ms     REAL,
  ttft_p90_ms     REAL,
  ttft_p99_ms     REAL,
  tpot_p50_ms     REAL,
  tpot_p90_ms     REAL,
  tpot_p99_ms     REAL,
  tokens_per_s    REAL    NOT NULL CHECK (tokens_per_s >= 0),
  tokens_per_s_sd REAL,
  e2e_ms          REAL,
  gather_ms       REAL,
  generate_ms     REAL,
  train_ms        REAL,
  other_ms        REAL,
  samples_per_s   REAL,
  step            INTEGER CHECK (step >= 0)
);
CREATE INDEX generations_by_run ON generations(run_id, id);
)sql";

}  // namespace hybrid::profiler::store
