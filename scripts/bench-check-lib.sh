# Sourced by scripts/bench-ci-check.sh and scripts/bench-noise-check.sh (after
# they set build_dir): the settings both read from the environment (documented
# in bench-ci-check.sh), the hybrid-bench binary, and the folder for the runs
# and reports, BENCH_CHECK_OUT or a temp dir removed on exit.
# shellcheck shell=bash disable=SC2034,SC2154  # the settings are read by the scripts that source this; they set build_dir

check_name=$(basename "$0" .sh)
target=${BENCH_CHECK_TARGET:-^matmul_forward/fp32}
slowdown=${BENCH_CHECK_SLOWDOWN:-0.30}
threshold=${BENCH_CHECK_THRESHOLD:-10%}
correction=${BENCH_CHECK_CORRECTION:-holm}
suite=${BENCH_CHECK_SUITE:-ci}

bench="$build_dir/bench/hybrid-bench"
[ -x "$bench" ] || { echo "$check_name: $bench not found (build the hybrid-bench target)" >&2; exit 2; }

if [ -n "${BENCH_CHECK_OUT:-}" ]; then
  out=$BENCH_CHECK_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
