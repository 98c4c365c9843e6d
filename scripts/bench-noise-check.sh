#!/usr/bin/env bash
# Measures how far the benchmark regression check can be trusted on this machine,
# counting false alarms (an unchanged run flagged) and catches (an injected slowdown
# of one benchmark, default +30 %, flagged), all compared with --normalize:
#
#   sequential   one baseline run of the suite, then N unchanged runs and N slowed
#                runs, each compared against that baseline: what comparing against a
#                stored baseline gives;
#   alternating  N times scripts/bench-ci-check.sh: baseline, unchanged and slowed
#                collected in alternated rounds in the same window: what CI runs;
#                then the same N unchanged and N slowed runs against ONE baseline,
#                all N checks' baseline rounds merged (one_baseline in the summary);
#   ab           N unchanged and N slowed runs of the README's command,
#                `hybrid-bench ab` (baseline and current in alternated rounds, compared
#                with compare's defaults: the suite's metric, unpaired over rounds, 10 %,
#                Holm), one after the other (unchanged, slowed, unchanged, ...); the same
#                kept runs are also judged with --test paired and --test unpaired. The slowed runs inject the slowdown
#                into the current side through the test hook HYBRID_BENCH_SLOWDOWN.
#
# Modes sequential and alternating judge each comparison with both metrics
# (real_time and cpu_time, same runs), with --normalize.
# It takes a while (about 20 minutes for N = 10 on 2 busy cores): run it in the
# background, e.g. `nice scripts/bench-noise-check.sh build > noise.log 2>&1 &`.
#
# usage: scripts/bench-noise-check.sh [BUILD_DIR] [N] [SOURCE_DIR]
# env:   BENCH_NOISE_MODE  sequential | alternating | both (the two) | ab (default both)
#        BENCH_AB_ROUNDS   --rounds of each hybrid-bench ab run (default: ab's own, 10)
#        BENCH_CHECK_TARGET, BENCH_CHECK_SLOWDOWN, BENCH_CHECK_THRESHOLD, BENCH_CHECK_SUITE,
#        BENCH_CHECK_CORRECTION,
#        BENCH_CHECK_ROUNDS, BENCH_CHECK_REPS as in scripts/bench-ci-check.sh;
#        BENCH_CHECK_OUT keeps every run and report.
set -euo pipefail

build_dir=${1:-build}
runs=${2:-10}
source_dir=${3:-$(cd "$(dirname "$0")/.." && pwd)}
mode=${BENCH_NOISE_MODE:-both}
metrics="real_time cpu_time"
# shellcheck source=bench-check-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-check-lib.sh"

run_suite() {  # name [env assignments...]
  local name=$1
  shift
  env "$@" "$bench" run --suite "$suite" --suites "$source_dir/bench/suites.json" \
    --build-dir "$build_dir/bench" --out "$out/$name.json" 2> "$out/$name.log"
}

# Compares CURRENT against BASE with one metric; prints "<exit code> <flagged target
# rows> <target rows> <regressions> <normalised change of the first target row>".
judge() {  # base current metric report
  local rc=0
  "$bench" compare "$1" "$2" --normalize --threshold "$threshold" --correction "$correction" \
    --metric "$3" > "$4" || rc=$?
  awk -v re="$target" -v rc="$rc" '
    $1 ~ re && NF > 3 { n++; if ($NF == "REGRESSION") f++; if (change == "") change = $6 }
    / regressions?, / { regs = $1 }
    END { printf "%d %d %d %d %s\n", rc, f + 0, n + 0, regs + 0, change }' "$4"
}

declare -A false_alarms catches
tally() {  # mode kind base current label -> one line, counts updated
  local line="$5:"
  for m in $metrics; do
    read -r rc flagged matched regs change < <(judge "$3" "$4" "$m" "${4%.json}.$m.txt")
    [ "$rc" -eq 2 ] && { echo "compare failed: $4" >&2; exit 2; }
    if [ "$2" = unchanged ]; then
      [ "$rc" -eq 1 ] && false_alarms[$1.$m]=$((${false_alarms[$1.$m]:-0} + 1))
      line+="  $m: $regs flagged (target $change)"
    else
      [ "$matched" -gt 0 ] && [ "$flagged" -eq "$matched" ] && catches[$1.$m]=$((${catches[$1.$m]:-0} + 1))
      line+="  $m: target $change, flagged $flagged/$matched ($regs in all)"
    fi
  done
  echo "$line  ($((SECONDS - start)) s)"
}

start=$SECONDS
echo "suite '$suite', threshold $threshold, correction $correction, target '$target' +$slowdown, N = $runs, mode $mode"
if [ "$mode" = sequential ] || [ "$mode" = both ]; then
  echo "-- sequential: one baseline, then $runs unchanged and $runs slowed runs"
  run_suite base
  for kind in unchanged slowed; do
    for i in $(seq 1 "$runs"); do
      if [ "$kind" = slowed ]; then
        run_suite "$kind$i" "HYBRID_BENCH_SLOWDOWN=$target=$slowdown"
      else
        run_suite "$kind$i"
      fi
      tally sequential "$kind" "$out/base.json" "$out/$kind$i.json" "$kind $i/$runs"
    done
  done
fi
# The README's command: exit code of `hybrid-bench ab` with its defaults (paired), and
# the same kept runs judged unpaired; counts in ab_counts[<test>.<unchanged|slowed>].
declare -A ab_counts
ab_run() {  # kind index
  local name="ab_$1$2" rc=0 args=()
  [ "$1" = slowed ] && args=(--current-env "HYBRID_BENCH_SLOWDOWN=$target=$slowdown")
  [ -n "${BENCH_AB_ROUNDS:-}" ] && args+=(--rounds "$BENCH_AB_ROUNDS")
  "$bench" ab --suite "$suite" --suites "$source_dir/bench/suites.json" \
    --baseline-build "$build_dir/bench" --current-build "$build_dir/bench" \
    --out-dir "$out/$name" "${args[@]}" > "$out/$name.txt" 2> "$out/$name.log" || rc=$?
  [ "$rc" -eq 2 ] && { cat "$out/$name.log" >&2; exit 2; }
  local line="$1 $2/$runs:"
  for t in paired unpaired; do
    local report="$out/$name.$t.txt" trc=0
    "$bench" compare "$out/$name/baseline.json" "$out/$name/current.json" --test "$t" \
      > "$report" || trc=$?
    [ "$trc" -eq 2 ] && { echo "compare failed: $name" >&2; exit 2; }
    read -r flagged change regs < <(awk -v re="$target" '
      $1 ~ re && NF > 3 { if ($NF == "REGRESSION") f++; if (change == "") change = $6 }
      / regressions?, / { regs = $1 }
      END { printf "%d %s %d\n", f + 0, change, regs + 0 }' "$report")
    if [ "$1" = unchanged ]; then
      [ "$trc" -eq 1 ] && ab_counts[$t.$1]=$((${ab_counts[$t.$1]:-0} + 1))
      line+="  $t: $regs flagged (target $change)"
    else
      [ "$flagged" -gt 0 ] && ab_counts[$t.$1]=$((${ab_counts[$t.$1]:-0} + 1))
      line+="  $t: target $change, flagged $flagged ($regs in all)"
    fi
  done
  # The default verdict is ab's own exit code.
  if [ "$1" = unchanged ]; then
    [ "$rc" -eq 1 ] && ab_counts[default.$1]=$((${ab_counts[default.$1]:-0} + 1))
  else
    grep -Eq "^$target.*REGRESSION\$" "$out/$name.txt" && ab_counts[default.$1]=$((${ab_counts[default.$1]:-0} + 1))
  fi
  echo "$line  exit $rc  ($((SECONDS - start)) s)"
}

if [ "$mode" = ab ]; then
  echo "-- ab: $runs unchanged and $runs slowed runs of hybrid-bench ab, alternating"
  for i in $(seq 1 "$runs"); do
    ab_run unchanged "$i"
    ab_run slowed "$i"
  done
  echo
  for t in default paired unpaired; do
    echo "ab $t: false alarms ${ab_counts[$t.unchanged]:-0}/$runs unchanged runs flagged;" \
         "catches ${ab_counts[$t.slowed]:-0}/$runs injected +$slowdown slowdowns of '$target' flagged"
  done
  echo "(hybrid-bench ab defaults: suite metric, threshold 10%, Holm; $((SECONDS - start)) s)"
  exit 0
fi

if [ "$mode" = alternating ] || [ "$mode" = both ]; then
  echo "-- alternating: $runs x scripts/bench-ci-check.sh"
  for i in $(seq 1 "$runs"); do
    dir="$out/alt$i"
    BENCH_CHECK_OUT="$dir" "$source_dir/scripts/bench-ci-check.sh" "$build_dir" "$source_dir" \
      > "$out/alt$i.log" 2>&1 || true
    [ -f "$dir/slowed.json" ] || { echo "bench-ci-check failed, see $out/alt$i.log" >&2; exit 2; }
    tally alternating unchanged "$dir/base.json" "$dir/unchanged.json" "unchanged $i/$runs"
    tally alternating slowed "$dir/base.json" "$dir/slowed.json" "slowed    $i/$runs"
  done
  # The same runs against ONE baseline: every baseline round of the N checks merged
  # (collected interleaved with all the unchanged and slowed runs), as a project
  # would keep one reference run of its base revision alongside a series of changes.
  echo "-- one baseline: the $runs checks' baseline rounds merged, against each unchanged and slowed run"
  "$bench" merge --out "$out/one_base.json" "$out"/alt*/base.round*.json > /dev/null
  for i in $(seq 1 "$runs"); do
    tally one_baseline unchanged "$out/one_base.json" "$out/alt$i/unchanged.json" "unchanged $i/$runs"
    tally one_baseline slowed "$out/one_base.json" "$out/alt$i/slowed.json" "slowed    $i/$runs"
  done
fi
echo
for md in sequential alternating one_baseline; do
  case "$md" in one_baseline) shown=alternating ;; *) shown=$md ;; esac
  { [ "$mode" = "$shown" ] || [ "$mode" = both ]; } || continue
  for m in $metrics; do
    echo "$md $m: false alarms ${false_alarms[$md.$m]:-0}/$runs unchanged runs flagged;" \
         "catches ${catches[$md.$m]:-0}/$runs injected +$slowdown slowdowns of '$target' flagged"
  done
done
echo "(threshold $threshold, --correction $correction, --normalize, $((SECONDS - start)) s)"
