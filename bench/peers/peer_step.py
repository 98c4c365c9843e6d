"""What the PyTorch peers of bench_train_step share: their command line and the
timed training step (forward, backward, optimizer step)."""
import argparse
import statistics
import time

import torch


def parse_args():
    """--threads, --steps, --B, --T with bench_train_step's defaults; sets
    torch's thread count and seeds it."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--B", type=int, default=4)
    ap.add_argument("--T", type=int, default=256)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    return a


def median_step_seconds(model, opt, idx, tgt, steps, bf16=False):
    """The median of `steps` timed steps, after one that warms up."""
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i > 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)
