#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything
# (CUDA parts compile and link when nvcc exists; warnings are errors), runs every
# test, then checks the benchmark regression comparer on this machine.
#
#   scripts/test.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

scripts/setup.sh
scripts/format.sh --check  # .clang-format is the layout; scripts/format.sh applies it
scripts/check-sizes.py     # no file over 400 lines, no function over 60 (tests aside)
scripts/check-families.py  # no product file outside engine/model/ names a model family
start=$SECONDS
# ccache (scripts/setup.sh installs it): a second run on the same machine, or a
# fresh clone in another folder, compiles only what changed. Paths are taken
# relative to the checkout, so that clones in other folders share the cache.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRID_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$build" -j"$(nproc)"
built=$SECONDS
echo "test.sh: build done in $((built - start)) s"

# Every test may start real mpirun processes and a display server.
source scripts/mpi-env.sh
ctest_log=$(mktemp)
trap 'rm -f "$ctest_log"' EXIT
(cd "$build" && ctest --output-on-failure -j2 --timeout 900) | tee "$ctest_log"
tested=$SECONDS
echo "test.sh: tests done in $((tested - start)) s"

# Every fuzz harness for 15 s, two at once (clang, ASan + UBSan; docs/reliability.md).
FUZZ_JOBS=2 scripts/fuzz.sh 15
fuzzed=$SECONDS
echo "test.sh: fuzzing done in $((fuzzed - start)) s"

scripts/bench-ci-check.sh "$build" "$PWD"
echo "test.sh: phases: build $((built - start)) s, tests $((tested - built)) s," \
  "fuzzing $((fuzzed - tested)) s, benchmark self-check $((SECONDS - fuzzed)) s"
echo "test.sh: the ten slowest tests (s):"
sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' "$ctest_log" |
  sort -rn | head -10 | sed 's/^/  /'
echo "test.sh: all done in $((SECONDS - start)) s"
