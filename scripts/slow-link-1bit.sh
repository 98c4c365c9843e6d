#!/usr/bin/env bash
# 1-bit Adam against AdamW on a slow link (issue 31): GPT-2 124M, one rank on
# each of two test hosts (scripts/testcluster.sh) linked at 1 Gbit/s with 1 ms
# of one-way latency. The runs alternate, AdamW then OneBitAdam, ROUNDS times;
# each run's step time is its median step (OneBitAdam compresses from step 3
# with freeze_step 1, so 7 of its 9 steps do). Then the cost model's prediction
# of both, from a probe of the same links and nothing else (hybrid-tune
# --dry-run: the prior weights, no trial). Prints both ratios and the error.
#
#   scripts/slow-link-1bit.sh [BUILD_DIR (build)]
#   ROUNDS=3 STEPS=9 SEQ=128 RATE=1gbit DELAY=1ms scripts/slow-link-1bit.sh
#
# Needs root for the test hosts; exits 2 where they cannot be made, 1 when a
# target is missed (OneBitAdam >= 2x faster, prediction within 25 %).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
rounds=${ROUNDS:-2} steps=${STEPS:-9} seq=${SEQ:-128}
rate=${RATE:-1gbit} delay=${DELAY:-1ms}
dir=$(mktemp -d /tmp/slow-link-1bit.XXXXXX)

cluster() { "$here/testcluster.sh" "$@"; }
cluster up 2 --rate "$rate" --delay "$delay" || exit 2
trap 'cluster down >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
source "$here/mpi-env.sh"
eval "$(cluster env)"
cluster hostfile 1 >"$dir/hosts"

# GPT-2 124M on synthetic tokens, one thread a rank (the two hosts share this
# machine's cores). The learning rate is small so that the short runs stay
# finite: in so few steps most embedding rows have no variance yet, and
# 1-bit Adam divides their compressed momentum by it; the time does not depend on it.
config() {  # NAME OPTIMIZER_JSON
  cat >"$dir/$1.json" <<EOF
{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
 "optimizer": $2,
 "hybrid": {"model": {"type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12,
                      "vocab_size": 50257, "seq_len": 1024},
            "data": {"synthetic": true, "seq_len": $seq}, "threads": 1}}
EOF
}
config adamw '{"type": "AdamW", "params": {"lr": 1e-6, "weight_decay": 0.0}}'
config onebit '{"type": "OneBitAdam", "params": {"lr": 1e-6, "weight_decay": 0.0, "freeze_step": 1}}'
echo '{"mbs": [1], "stage": [0]}' >"$dir/space.json"

median_ms() {  # RESULT_JSON
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ms_per_step_median"])' "$1"
}
for r in $(seq "$rounds"); do
  for opt in adamw onebit; do
    mpirun --hostfile "$dir/hosts" -np 2 "$build/engine/hybrid-train" --config "$dir/$opt.json" \
      --steps "$steps" --quiet --result "$dir/$opt.$r.json"
    echo "round $r $opt: $(median_ms "$dir/$opt.$r.json") ms/step (median of $steps steps)"
  done
done

"$build/autotune/hybrid-tune" probe --nprocs 2 --hostfile "$dir/hosts" --db "$dir/probe.db" \
  >"$dir/probe.log" 2>&1 || { cat "$dir/probe.log"; exit 1; }
predicted_ms() {  # NAME: the dry run's predicted step time of the one candidate
  "$build/autotune/hybrid-tune" --config "$dir/$1.json" --space "$dir/space.json" --nprocs 2 \
    --hostfile "$dir/hosts" --dry-run --db "$dir/probe.db" >"$dir/$1.dry.log" 2>&1
  awk '$1 == "mbs=1,gas=1,stage=0" {print $4}' "$dir/$1.dry.log"
}

python3 - "$dir" "$rounds" "$(predicted_ms adamw)" "$(predicted_ms onebit)" <<'EOF'
import json, statistics, sys
d, rounds, pa, po = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ms = lambda opt: [json.load(open(f"{d}/{opt}.{r}.json"))["ms_per_step_median"]
                  for r in range(1, rounds + 1)]
a, o = statistics.median(ms("adamw")), statistics.median(ms("onebit"))
measured, predicted = a / o, pa / po
err = abs(predicted - measured) / measured
cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
print(f"CPU: {cpu}")
print(f"measured  AdamW {a:.0f} ms, OneBitAdam {o:.0f} ms per step: OneBitAdam {measured:.2f}x faster")
print(f"predicted AdamW {pa:.0f} ms, OneBitAdam {po:.0f} ms per step: {predicted:.2f}x"
      f" (error {100 * err:.1f} % of the measured ratio)")
ok = measured >= 2.0 and err <= 0.25
print("targets (>= 2x, prediction within 25 %):", "met" if ok else "MISSED")
sys.exit(0 if ok else 1)
EOF
