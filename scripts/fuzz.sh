#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang with ASan + UBSan, in build-fuzz/)
# and runs each for SECONDS (default 15), starting from its seed corpus in
# fuzz/corpus/<harness>/ and its crash regressions in fuzz/regressions/<harness>/.
# New corpus entries go to build-fuzz/corpus/<harness>/ (the repo's seeds stay
# small); a crash, leak, UB report or timeout stops that harness and fails the
# script, leaving the input in build-fuzz/artifacts/<harness>/.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     e.g. scripts/fuzz.sh 600 (the nightly run)
# Environment: FUZZ_JOBS (harnesses run at once, default 1), FUZZ_BUILD (build dir).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
shift || true
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}

start=$SECONDS
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# As in scripts/test.sh: cache hits across checkouts, and for the sources that use the
# precompiled header (without the sloppiness, ccache never caches those).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DHYBRID_FUZZ=ON -DHYBRID_TESTS=OFF -DHYBRID_BENCH=OFF \
  -DHYBRID_CUDA=OFF -DHYBRID_GUI=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "fuzz.sh: build done in $((SECONDS - start)) s"

harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  for f in fuzz/fuzz_*.cpp; do
    name=$(basename "$f" .cpp)
    harnesses+=("${name#fuzz_}")
  done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export HYBRID_FUZZ_TMP=$scratch

# One harness: libFuzzer's own limits are the bugs we look for: 2 GiB of RSS, a
# single malloc over 256 MiB (a size taken from a header), 10 s for one input.
run_one() {
  local h=$1 seeds=(fuzz/corpus/$1)
  [ -d "fuzz/regressions/$h" ] && seeds+=("fuzz/regressions/$h")
  local dict=()
  [ -f "fuzz/dict/$h.dict" ] && dict=(-dict="fuzz/dict/$h.dict")
  mkdir -p "$build/corpus/$h" "$build/artifacts/$h"
  nice "$build/fuzz/fuzz_$h" "$build/corpus/$h" "${seeds[@]}" "${dict[@]}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$h/" \
    >"$build/fuzz_$h.log" 2>&1
  echo $? >"$build/fuzz_$h.rc"
}

for h in "${harnesses[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  (set +e; run_one "$h") &
done
wait
failed=()
for h in "${harnesses[@]}"; do
  [ "$(cat "$build/fuzz_$h.rc" 2>/dev/null)" = 0 ] || failed+=("$h")
  log="$build/fuzz_$h.log"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'exec/s: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  printf 'fuzz.sh: %-16s %10s execs %7s exec/s  %s\n' "$h" "$execs" "$rate" "$cov"
done
if ((${#failed[@]})); then
  for h in "${failed[@]}"; do
    echo "fuzz.sh: $h FAILED (log $build/fuzz_$h.log, input in $build/artifacts/$h/):"
    grep -E 'ERROR|SUMMARY|runtime error|fuzz: |terminate' "$build/fuzz_$h.log" | head -5
  done
  exit 1
fi
echo "fuzz.sh: ${#harnesses[@]} harnesses, no findings, $((SECONDS - start)) s in all"
