#!/usr/bin/env bash
# Proves the benchmark regression check works on this machine, as CI runs it:
#   1. runs the `ci` suite as three runs: a baseline, an unchanged run, and a run with
#      an injected 30 % slowdown of one benchmark (HYBRID_BENCH_SLOWDOWN, bench/slowdown.h);
#   2. compares the unchanged and the slowed run against the baseline with --normalize;
#   3. fails if the unchanged run is flagged (false alarm) or the slowed benchmark is
#      not flagged (missed regression).
# Each run is collected in alternated rounds (baseline, unchanged, slowed, then the next
# round in a rotated order, ...) and merged: on a shared runner the load drifts by tens
# of percent from one minute to the next, and runs made one after the other would
# compare two different machines. Alternation gives every run the same mix of
# quiet and busy moments; the same recipe compares a pull request with its base
# (docs/bench.md). Absolute timings never fail this check: only verdicts between
# runs of the same job.
#
# usage: scripts/bench-ci-check.sh [BUILD_DIR] [SOURCE_DIR]
# env:   BENCH_CHECK_TARGET     regex of the benchmark(s) to slow (default ^matmul_forward/fp32, a real kernel;
#                               the benchmark must use bench/slowdown.h)
#        BENCH_CHECK_SLOWDOWN   injected fraction (default 0.30)
#        BENCH_CHECK_THRESHOLD  --threshold of the comparisons (default 10%)
#        BENCH_CHECK_METRIC     --metric of the comparisons (default cpu_time: the ci suite is
#                               single-threaded, and on a shared runner the time spent
#                               descheduled shows in real time, not in the work done)
#        BENCH_CHECK_CORRECTION --correction of the comparisons (default holm: six benchmarks
#                               at alpha 0.05 each would flag unchanged code too often)
#        BENCH_CHECK_TEST       --test of the comparisons (default unpaired, compare's default:
#                               Mann-Whitney U over the rounds; paired: Wilcoxon signed-rank)
#        BENCH_CHECK_ROUNDS     alternated rounds per run (default 10)
#        BENCH_CHECK_REPS       repetitions per round (default 1: repetitions in one process
#                               share its CPU placement and memory layout, so each process
#                               is one independent sample; rounds x reps per run)
#        BENCH_CHECK_SUITE      suite (default ci)
#        BENCH_CHECK_OUT        keep the runs and reports here (default: a temp dir, removed)
# The last line is machine-readable: "bench-ci-check: result false_alarm=0|1 caught=0|1".
set -euo pipefail

build_dir=${1:-build}
source_dir=${2:-$(cd "$(dirname "$0")/.." && pwd)}
metric=${BENCH_CHECK_METRIC:-cpu_time}
test_kind=${BENCH_CHECK_TEST:-unpaired}
rounds=${BENCH_CHECK_ROUNDS:-10}
reps=${BENCH_CHECK_REPS:-1}
# shellcheck source=bench-check-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-check-lib.sh"

run_round() {  # condition round
  local env_args=()
  [ "$1" = slowed ] && env_args=("HYBRID_BENCH_SLOWDOWN=$target=$slowdown")
  env "${env_args[@]}" "$bench" run --suite "$suite" --suites "$source_dir/bench/suites.json" \
    --build-dir "$build_dir/bench" --repetitions "$reps" --out "$out/$1.round$2.json" \
    2> "$out/$1.round$2.log" || { cat "$out/$1.round$2.log" >&2; exit 2; }
}

compare() {  # current; prints the table, returns hybrid-bench's exit code
  local rc=0
  "$bench" compare "$out/base.json" "$out/$1.json" --normalize --threshold "$threshold" \
    --metric "$metric" --correction "$correction" --test "$test_kind" --markdown "$out/$1.md" --json "$out/$1.report.json" > "$out/$1.txt" || rc=$?
  cat "$out/$1.txt"
  return $rc
}

start=$SECONDS
conditions=(base unchanged slowed)
for r in $(seq 1 "$rounds"); do
  # Rotate the order so that no condition always runs first (or last) in a round.
  for k in 0 1 2; do
    c=${conditions[$(((k + r) % 3))]}
    run_round "$c" "$r"
  done
  echo "round $r/$rounds done ($((SECONDS - start)) s)" >&2
done
for c in "${conditions[@]}"; do
  "$bench" merge --out "$out/$c.json" "$out/$c".round*.json
done

false_alarm=0
caught=0
echo
echo "== unchanged vs baseline (expect no regression)"
rc=0
compare unchanged || rc=$?
[ "$rc" -eq 2 ] && { echo "bench-ci-check: hybrid-bench compare failed" >&2; exit 2; }
[ "$rc" -eq 1 ] && false_alarm=1

echo
echo "== slowed ($target +$slowdown) vs baseline (expect $target flagged)"
rc=0
compare slowed || rc=$?
[ "$rc" -eq 2 ] && { echo "bench-ci-check: hybrid-bench compare failed" >&2; exit 2; }
# Table rows: "<name> ... <verdict>"; every benchmark matching the target must be a REGRESSION.
matched=$(awk -v re="$target" '$1 ~ re && NF > 3 { n++ } END { print n + 0 }' "$out/slowed.txt")
flagged=$(awk -v re="$target" '$1 ~ re && $NF == "REGRESSION" { n++ } END { print n + 0 }' "$out/slowed.txt")
if [ "$matched" -eq 0 ]; then
  echo "bench-ci-check: no benchmark of suite '$suite' matches '$target'" >&2
  exit 2
fi
[ "$flagged" -eq "$matched" ] && caught=1

echo
status=0
if [ "$false_alarm" -eq 1 ]; then
  echo "bench-ci-check: FAIL: the unchanged run was flagged as a regression (false alarm)" >&2
  status=1
fi
if [ "$caught" -eq 0 ]; then
  echo "bench-ci-check: FAIL: the injected +$slowdown on '$target' was not flagged ($flagged of $matched)" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "bench-ci-check: OK: unchanged run passed, injected +$slowdown on '$target' flagged ($flagged/$matched); $rounds rounds x $reps repetitions, $metric, $correction, test $test_kind, threshold $threshold, $((SECONDS - start)) s"
elif [ -z "${BENCH_CHECK_OUT:-}" ]; then
  trap - EXIT
  echo "bench-ci-check: runs and reports kept in $out" >&2
fi
echo "bench-ci-check: result false_alarm=$false_alarm caught=$caught"
exit $status
