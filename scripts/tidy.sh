#!/usr/bin/env bash
# clang-tidy with the agreed check set (.clang-tidy) over the project's sources
# (tests excluded). Needs a configured build with compile_commands.json; makes one
# in build-tidy when none is given. Exits non-zero on any finding.
#
#   scripts/tidy.sh [BUILD_DIR] [PATH...]     (default: build-tidy, every folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tidy}
shift || true
command -v clang-tidy >/dev/null || { echo "tidy: clang-tidy is not installed (scripts/setup.sh)"; exit 2; }
if [ ! -f "$build/compile_commands.json" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DHYBRID_CUDA=OFF >/dev/null
fi
paths=("$@")
((${#paths[@]})) || paths=(base kernels engine profiler autotune gui bench)
mapfile -t files < <(git ls-files "${paths[@]}" | grep -E '\.cpp$' | grep -v '^tests/')
echo "tidy: ${#files[@]} files"
# GCC-only warning flags in the compile commands are not clang's business.
# "N warnings generated" counts what the check set suppresses: noise.
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 8 \
  clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option \
  2> >(grep -v 'warnings\? generated\.$' >&2)
echo "tidy: no findings"
