"""PyTorch's decode of GPT-2 124M with a key/value cache (transformers'
GPT2LMHeadModel, random weights), the peer of bench_generate's decode/124M:
prefill a 128-token prompt, then 31 greedy steps of one token each through
past_key_values; prints the median time per step.

  /work/peers-venv-deb/bin/python bench/peers/pytorch_gpt2_decode.py [--threads 2] [--dtype fp32|bf16] [--batch 1]
"""
import argparse
import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    if a.dtype == "bf16":
        model = model.to(torch.bfloat16)
    ids = (torch.arange(128).repeat(a.batch, 1) * 7 + torch.arange(a.batch)[:, None] * 131) % 50257
    steps = []
    with torch.no_grad():
        for _ in range(a.reps):
            out = model(input_ids=ids, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            for _ in range(31):
                t0 = time.perf_counter()
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
                steps.append(time.perf_counter() - t0)
    ms = 1e3 * statistics.median(steps)
    print(f"pytorch {torch.__version__} gpt2 124M {a.dtype} batch {a.batch}, {a.threads} threads: "
          f"{ms:.2f} ms per decode step, {1e3 * a.batch / ms:.1f} tokens/s")


if __name__ == "__main__":
    main()
