#!/usr/bin/env python3
"""Reference values for tests/mpi/onebit_adam_cases.h: DeepSpeed's OnebitAdam
(deepspeed/runtime/fp16/onebit/adam.py) and its compressed all-reduce
(deepspeed/runtime/comm/nccl.py), written from their description in NumPy
(float32, as torch computes them), for W simulated ranks on the test's problem.

    /work/peers-venv/bin/python scripts/peers/onebit_adam_reference.py 2 > tests/mpi/data/onebit_adam_np2.json
    /work/peers-venv/bin/python scripts/peers/onebit_adam_reference.py 4 > tests/mpi/data/onebit_adam_np4.json

The problem (the test builds the same): tensors of 37, 64 and 130 values; p0[i]
= 0.1 sin(i + 1); rank r's gradient at step s is (p[i] - t_r[i]) a[i] + n[i],
t_r[i] = 0.05 cos(i (r + 1)), a[i] = 1 + (i mod 5) / 5, n[i] = 0.01 sin(0.37 i +
1.3 s + 2.1 r), zero on the masked range [40, 48); lr 1e-2, betas (0.9, 0.999),
eps 1e-8, weight decay 0.01, freeze_step 6, 20 steps.
"""
import json
import math
import sys

import numpy as np

f32 = np.float32
SIZES = [37, 64, 130]
MASKED = (40, 48)
LR, B1, B2, EPS, WD = f32(1e-2), f32(0.9), f32(0.999), f32(1e-8), f32(0.01)
FREEZE, STEPS = 6, 20


def gradient(p, r, s):
    i = np.arange(p.size)
    t = (0.05 * np.cos(i * (r + 1.0))).astype(f32)
    a = (1.0 + (i % 5) / 5.0).astype(f32)
    n = (0.01 * np.sin(0.37 * i + 1.3 * s + 2.1 * r)).astype(f32)
    g = ((p - t) * a + n).astype(f32)
    g[MASKED[0]:MASKED[1]] = 0
    return g


def sign(x):  # DeepSpeed's sign().add_(1).bool() → ±1: 0 counts as +1
    return np.where(x >= 0, f32(1), f32(-1))


def scale_of(x):  # ‖x‖₂ / √n, in double then float32
    return f32(math.sqrt(float(np.dot(x.astype(np.float64), x.astype(np.float64)))) / math.sqrt(x.size))


def padded_size(n, world):  # n rounded up to a multiple of W·lcm(W, 8) (DeepSpeed's size·divider)
    step = world * (world * 8 // math.gcd(world, 8))
    return -(-n // step) * step


def new_errors(world):  # each tensor's worker errors (one per rank) and server errors
    return [([np.zeros(padded_size(n, world), f32) for _ in range(world)],
             [np.zeros(padded_size(n, world) // world, f32) for _ in range(world)]) for n in SIZES]


def averaged(grads, world):  # as the engine: summed over the ranks, then scaled by 1/W
    g = grads[0].copy()
    for r in range(1, world):
        g = (g + grads[r]).astype(f32)
    return (g * f32(1.0 / world)).astype(f32)


def compressed_allreduce(ms, worker_errors, server_errors, world):
    """ms: each rank's tensor; returns the averaged tensor every rank ends with."""
    n = ms[0].size
    padded = padded_size(n, world)
    chunk = padded // world
    signs, scales = [], []
    for r in range(world):
        buf = np.zeros(padded, f32)
        buf[:n] = ms[r]
        buf = (buf + worker_errors[r]).astype(f32)
        scale = scale_of(buf)
        worker_errors[r] = (buf - scale * sign(buf)).astype(f32)
        signs.append(sign(buf))
        scales.append(scale)
    out = np.zeros(padded, f32)
    for j in range(world):  # rank j serves chunk j
        server = np.zeros(chunk, f32)
        for r in range(world):
            server = (server + sign_chunk(signs[r], j, chunk) * f32(scales[r] * f32(1.0 / world))).astype(f32)
        server = (server + server_errors[j]).astype(f32)
        s = scale_of(server)
        server_errors[j] = (server - s * sign(server)).astype(f32)
        out[j * chunk:(j + 1) * chunk] = s * sign(server)
    return out[:n]


def sign_chunk(signs, j, chunk):
    return signs[j * chunk:(j + 1) * chunk]


def main():
    world = int(sys.argv[1])
    total = sum(SIZES)
    starts = np.cumsum([0] + SIZES)
    p = (0.1 * np.sin(np.arange(total) + 1.0)).astype(f32)
    m = np.zeros(total, f32)
    v = np.zeros(total, f32)
    errors = None
    for s in range(1, STEPS + 1):
        grads = [gradient(p, r, s) for r in range(world)]
        if s == 1:
            continue  # DeepSpeed's initialization step
        if s <= max(FREEZE, 2):
            g = averaged(grads, world)
            m = (B1 * m + (1 - B1) * g).astype(f32)
            v = (B2 * v + (1 - B2) * g * g).astype(f32)
        else:
            if errors is None:
                errors = new_errors(world)
            ms = [(B1 * m + (1 - B1) * grads[r]).astype(f32) for r in range(world)]
            for t, (b, e) in enumerate(zip(starts[:-1], starts[1:])):
                m[b:e] = compressed_allreduce([x[b:e] for x in ms], errors[t][0], errors[t][1], world)
            m[MASKED[0]:MASKED[1]] = 0
        p = (p - LR * (m / (np.sqrt(v) + EPS) + WD * p)).astype(f32)
    json.dump({"world": world, "numpy": np.__version__, "params": [float(x) for x in p]},
              sys.stdout)


if __name__ == "__main__":
    main()
