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
# The phases' times and the ten slowest tests, printed at the end of every run,
# a failing one included (a failed phase ends the run, and this still prints).
built='' tested='' fuzzed=''
summary() {
  local rc=$? end=$SECONDS
  echo "test.sh: phases: build $((${built:-$end} - start)) s${built:+, tests $((${tested:-$end} - built)) s}${tested:+, fuzzing $((${fuzzed:-$end} - tested)) s}${fuzzed:+, benchmark self-check $((end - fuzzed)) s}"
  if [ -s "$ctest_log" ]; then
    echo "test.sh: the ten slowest tests (s):"
    sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' "$ctest_log" |
      sort -rn | sed -n '1,10s/^/  /p'  # sed reads to the end: no SIGPIPE under pipefail
  fi
  if ((rc == 0)); then
    echo "test.sh: all done in $((end - start)) s"
  else
    echo "test.sh: FAILED (exit $rc) after $((end - start)) s"
  fi
  exit "$rc"  # the run's own status, whatever the summary's commands returned
}
# ctest's output is kept in the build directory (the last run's, for the summary
# above and for reading afterwards).
ctest_log=$build/ctest.log
rm -f "$ctest_log"
trap summary EXIT

# ccache (scripts/setup.sh installs it): a second run on the same machine, or a
# fresh clone in another folder, compiles only what changed. Paths are taken
# relative to the checkout, so that clones in other folders share the cache.
# The sloppiness lets ccache cache the compiles that use a precompiled header
# (every test and library source): without it, each of them would be a miss.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRID_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$build" -j"$(nproc)"
built=$SECONDS
echo "test.sh: build done in $((built - start)) s"

# Every test may start real mpirun processes and a display server.
source scripts/mpi-env.sh
(cd "$build" && ctest --output-on-failure -j2 --timeout 900) | tee "$ctest_log"
tested=$SECONDS
echo "test.sh: tests done in $((tested - start)) s"

# Every fuzz harness for 15 s, two at once (clang, ASan + UBSan; docs/reliability.md).
FUZZ_JOBS=2 scripts/fuzz.sh 15
fuzzed=$SECONDS
echo "test.sh: fuzzing done in $((fuzzed - start)) s"

scripts/bench-ci-check.sh "$build" "$PWD"
