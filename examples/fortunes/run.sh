#!/usr/bin/env bash
# Trains a small GPT-2 on the fortune cookies that Debian's `fortunes` package
# ships (scripts/setup.sh installs it) and prints a sample of its text:
# cookies → JSONL → a BPE tokenizer → token shards with a validation split →
# hybrid-train (validation loss every 100 steps) → hybrid-generate.
#
#   examples/fortunes/run.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, fortunes-run)
#
# OUT_DIR must not exist or be empty; it ends up holding fortunes.jsonl, the
# tokenizer (fortunes.model), the shards (data/), the checkpoint (ckpt/),
# train.log, result.json (val_losses among its keys) and sample.txt.
# FORTUNES_DIR (default /usr/share/games/fortunes) and STEPS (default 300, the schedule's length) override.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-fortunes-run}
fortunes=${FORTUNES_DIR:-/usr/share/games/fortunes}
steps=${STEPS:-300}

if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "run.sh: $out exists and is not empty" >&2
  exit 2
fi
mkdir -p "$out"
cd "$out"

python3 "$here/fortunes_to_jsonl.py" "$fortunes" >fortunes.jsonl
"$build/engine/hybrid-data" train-tokenizer --type bpe --vocab 2048 --out fortunes.model fortunes.jsonl
"$build/engine/hybrid-data" tokenize --tokenizer fortunes.model --out data --val-fraction 0.05 \
  fortunes.jsonl
"$build/engine/hybrid-train" --config "$here/ds_config.json" --steps "$steps" --save ckpt \
  --result result.json | tee train.log
"$build/engine/hybrid-generate" --model ckpt --tokenizer fortunes.model --prompt "A man" \
  --max-new-tokens 48 --temperature 0.8 --top-k 40 --seed 1 | tee sample.txt
