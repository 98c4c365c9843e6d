#!/usr/bin/env bash
# A launcher template that stands in for hybrid-train with scripted step times:
#   --launcher "bash series_launcher.sh SPECFILE {key} {dir} {cmd}"
# SPECFILE lines: "<phase> <key> <ms> <ms> ...", phase "first" for a trial's
# measurements (again on re-measurement), "remeasure" for its later attempts
# when given, "confirm" for confirmation runs (their trial directory is
# .../confirm-N). It writes the result JSON hybrid-train would (--result, one
# sample and 64 tokens per step) with these step times, and exits 0.
spec=$1 key=$2 dir=$3
shift 3
result="" steps=0
while [ $# -gt 0 ]; do
  case "$1" in
    --result) result=$2; shift ;;
    --steps) steps=$2; shift ;;
  esac
  shift
done
phase=first
case "$dir" in */confirm-*) phase=confirm ;; esac
count_file="$dir/attempts"
n=$(( $(cat "$count_file" 2>/dev/null || echo 0) + 1 ))
echo $n > "$count_file"
if [ $phase = first ] && [ $n -gt 1 ] && grep -q "^remeasure $key " "$spec"; then phase=remeasure; fi
line=$(grep "^$phase $key " "$spec" | head -1)
[ -n "$line" ] || { echo "series_launcher: no '$phase $key' in $spec" >&2; exit 1; }
read -r -a ms <<< "${line#"$phase $key "}"
list=""
for ((i = 0; i < steps; ++i)); do list+="${list:+, }${ms[i % ${#ms[@]}]}"; done
median=${ms[0]}
cat > "$result" <<JSON
{"status": "ok", "steps": $steps, "world_size": 1, "ms_per_step_median": $median,
 "samples_per_s": $(awk "BEGIN{print 1000/$median}"), "tokens_per_s": $(awk "BEGIN{print 64000/$median}"),
 "flops_per_step": 1000000, "peak_memory_total_bytes": 1000, "step_ms": [$list]}
JSON
