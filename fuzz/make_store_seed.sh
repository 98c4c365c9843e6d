#!/usr/bin/env bash
# Writes fuzz/corpus/run_store/tiny.db: the Kineto seed imported by hybrid-prof
# (a run with ranks, modules, events and the GPU timeline), plus one sweep with a
# trial (with its step-time spread), a tie break, a pruned candidate and a probe,
# compacted to 512-byte pages (about 40 KB).
# Rerun after a schema change (read-only opens refuse an older schema).
#   fuzz/make_store_seed.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=fuzz/corpus/run_store/tiny.db
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/profiler/hybrid-prof" import-kineto --db "$tmp/seed.db" fuzz/corpus/kineto/small.json >/dev/null
sqlite3 "$tmp/seed.db" <<'SQL'
INSERT INTO sweeps (name, base_config_json, space_json, strategy, metric, status, created_at, finished_at)
  VALUES ('seed', '{"train_batch_size":8}', '{"zero_optimization.stage":[0,1]}', 'grid', 'throughput', 'done', 1.7e9, 1.7e9 + 60);
INSERT INTO trials (sweep_id, key, config_json, status, reason, metric, tokens_per_s, samples_per_s,
                    latency_ms, predicted_mem_bytes, peak_mem_bytes, wall_s, run_id, created_at, updated_at)
  VALUES (1, 'mbs=1,gas=8,stage=0', '{"train_micro_batch_size_per_gpu":1}', 'ok', '', 1000.5, 1000.5, 7.8,
          12.5, 1048576, 1000000, 3.5, 1, 1.7e9, 1.7e9 + 5);
UPDATE trials SET step_count = 8, step_median_ms = 7.8, step_q1_ms = 7.6, step_q3_ms = 8.1,
                  step_mad_ms = 0.2, step_cv = 0.05, step_ci_low_ms = 7.5, step_ci_high_ms = 8.2,
                  noisy = 0, attempts = 2 WHERE id = 1;
INSERT INTO tie_breaks (sweep_id, created_at, candidates_json, rounds, winner_key, decided, summary)
  VALUES (1, 1.7e9 + 50, '["mbs=1,gas=8,stage=0","mbs=2,gas=4,stage=0"]', 3, 'mbs=1,gas=8,stage=0', 1, 'seed');
INSERT INTO pruned VALUES (1, 'mbs=8,gas=1,stage=0', '{}', 99999999, 1000000, 'over budget');
INSERT INTO probes (created_at, host, device, world_size, gemm_flops_per_s) VALUES (1.7e9, 'ci', 'cpu', 1, 1e11);
INSERT INTO probe_bandwidth VALUES (1, 'all_reduce', 1048576, 5.0, 5.0);
PRAGMA journal_mode=DELETE;
PRAGMA page_size=512;
VACUUM;
SQL
mkdir -p "$(dirname "$out")"
cp "$tmp/seed.db" "$out"
echo "wrote $out ($(stat -c %s "$out") bytes)"
