#!/usr/bin/env bash
# Longer kill storms than CI's (docs/reliability.md, "Kill storms"): the kill-storm
# tests of tests/faults with more kills, once per seed.
#
#   scripts/kill-storm.sh [KILLS] [SEEDS] [BUILD_DIR]     (default: 20 kills, seeds 1..5, build)
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-20} seeds=${2:-5} build=${3:-build}
cmake --build "$build" --target hybrid_faults_tests hybrid-tune hybrid-train hybrid-ckpt hybrid-prof
source scripts/mpi-env.sh
start=$SECONDS
failed=0
for seed in $(seq 1 "$seeds"); do
  log=$(mktemp)
  if ! HYBRID_KILL_STORM_KILLS=$kills HYBRID_KILL_STORM_SEED=$seed \
    "$build/tests/hybrid_faults_tests" --gtest_filter='KillStorm.*' >"$log" 2>&1; then
    failed=$((failed + 1))
    grep -B2 -A12 'Failure' "$log" | head -60
  fi
  grep -E 'storm:|  OK  |FAILED  \]' "$log"
  rm -f "$log"
done
echo "kill-storm.sh: $seeds seed(s) x $kills kills, $failed failed, in $((SECONDS - start)) s"
exit $((failed > 0))
