#!/usr/bin/env bash
# examples/fortunes/run.sh end to end on the cookies Debian's `fortunes` ships:
# the validation loss after the example's last step is below the unigram
# entropy of the validation tokens, computed here from the val shards (llm.c's
# format read on its own: H = −Σ p·ln p over the tokens' frequencies, nats like
# the loss), the validation was measured every val_every steps and after the
# last, and hybrid-generate printed text that is not empty.
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

python3 - "$work/run" "$src/examples/fortunes" <<'PY'
import collections, glob, json, math, os, re, struct, sys

run, example = sys.argv[1], sys.argv[2]
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
with open(os.path.join(example, "ds_config.json")) as f:
    every = json.load(f)["hybrid"]["data"]["val_every"]
assert result["status"] == "ok", result
steps = result["global_step"]
val = result["val_losses"]
expected = list(range(every, steps + 1, every)) + ([steps] if steps % every else [])
assert [v["step"] for v in val] == expected, f"validation after steps {[v['step'] for v in val]}, not {expected}"
final = val[-1]["loss"]
print(f"fortunes_example: {total} validation tokens, {len(counts)} distinct; unigram entropy "
      f"{entropy:.4f} nats; validation loss {[round(v['loss'], 4) for v in val]} after {expected}")
assert final < entropy, f"final validation loss {final:.4f} is not below the unigram entropy {entropy:.4f}"

# hybrid-generate prints "0: <token ids>", then "0: <text>" (which may span
# lines), then "N new tokens in ...": the text must hold more than whitespace.
with open(os.path.join(run, "sample.txt")) as f:
    lines = f.read().splitlines()
ids = [i for i, l in enumerate(lines) if re.fullmatch(r"0: \d+(,\d+)*", l)]
ends = [i for i, l in enumerate(lines) if re.match(r"\d+ new tokens in ", l)]
assert ids and ends and ids[0] < ends[0], "no generation output in sample.txt:\n" + "\n".join(lines)
text = "\n".join(lines[ids[0] + 1:ends[0]])
assert text.startswith("0: ") and text[3:].strip(), f"no generated text: {text!r}"
print("fortunes_example: sample after the prompt \"A man\":\n" + text[3:])
PY
