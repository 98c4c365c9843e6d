#!/usr/bin/env bash
# The README's main job: installs what is missing, builds the tools, and runs a
# real hybrid-tune sweep of a small GPT-2 on 2 CPU ranks (results/hybrid.db,
# results/best.json). Re-running resumes the sweep: finished trials are not rerun.
#
#   scripts/main-job.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

scripts/setup.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target hybrid-tune hybrid-train hybrid-prof

source scripts/mpi-env.sh
mkdir -p results
"$build/autotune/hybrid-tune" \
  --config results/examples/gpt2-small-cpu.json \
  --space results/examples/space-cpu.json \
  --nprocs 2 \
  --db results/hybrid.db \
  --out results/best.json
