"""Hugging Face tokenizers' batch encoder on the fortune cookies, the peer of
bench_tokenize: Tokenizer.encode_batch over every document (no special tokens
added), its threads set by RAYON_NUM_THREADS (bench_tokenize sets it to its own
count); prints the median MB/s (UTF-8 bytes) of --reps runs after one warm-up
run, and on its last line the same as JSON for bench_tokenize to read.

  RAYON_NUM_THREADS=2 /work/peers-venv/bin/python bench/peers/hf_tokenize_throughput.py \\
      --tokenizer tests/engine/data/tokenizer/gpt2_style.json [--reps 5]

Peers only (never run by the suite): tokenizers 0.15.2. The corpus is read as
hf_bpe_reference.py (and engine/data/fortune_corpus.cpp) reads it.
"""
import argparse
import json
import os
import statistics
import sys
import time

import tokenizers
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_bpe_reference import corpus_files, documents  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    tok = Tokenizer.from_file(a.tokenizer)
    docs = [d for p in corpus_files() for d in documents(p)]
    size = sum(len(d.encode("utf-8")) for d in docs)
    tokens = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))  # warm-up
    secs = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        tok.encode_batch(docs, add_special_tokens=False)
        secs.append(time.perf_counter() - t0)
    mbs = size / 1e6 / statistics.median(secs)
    threads = os.environ.get("RAYON_NUM_THREADS", "all")
    print(f"tokenizers {tokenizers.__version__} encode_batch, {threads} threads: {mbs:.2f} MB/s "
          f"(median of {a.reps}), {len(docs)} documents, {size / 1e6:.2f} MB, {tokens} tokens")
    print(json.dumps({"version": tokenizers.__version__, "mb_per_s": mbs, "tokens": tokens,
                      "bytes": size, "secs": secs}))


if __name__ == "__main__":
    main()
