#!/usr/bin/env python3
"""Reference values for tests/mpi/onebit_lamb_cases.h: DeepSpeed's OnebitLamb
(deepspeed/runtime/fp16/onebit/lamb.py) written from its description in NumPy
(float32 vectors, Python doubles for the per-tensor scalars, as torch computes
them), for W simulated ranks, on the problem of onebit_adam_reference.py (whose
gradient and compressed all-reduce it reuses):

    /work/peers-venv/bin/python scripts/peers/onebit_lamb_reference.py 2 > tests/mpi/data/onebit_lamb_np2.json
    /work/peers-venv/bin/python scripts/peers/onebit_lamb_reference.py 4 > tests/mpi/data/onebit_lamb_np4.json

The steps: step 1 initializes only; steps 2..max(freeze_step, 2) are LAMB
without bias correction on the averaged gradients, the trust ratio clamped to
[min_coeff, max_coeff] and its moving average (coeff_beta) kept, the variance
copied at step freeze_step; after them the momenta of all tensors, each scaled
by its tensor's scaling coefficient (mean momentum RMS / its own RMS, fixed at
the first compressed step), are one flat buffer padded to the compression's
multiple (the padding keeps its value from step to step), averaged by the
compressed all-reduce, unscaled and masked; the gradient reconstructed from
the momentum feeds a fresh variance, whose ratio to the frozen one gives the
factor (clamped, limited to ±factor_threshold of the previous factor) that
scales the frozen coefficient. lr 0.1, betas (0.9, 0.999), eps 1e-8, weight
decay 0.01, freeze_step 6, max_coeff 10, min_coeff 0.01,
coeff_beta 0.8 (1/(1 − coeff_beta) ≤ the warm-up, as DeepSpeed advises), 20 steps, with three sets of the factor's bounds (BOUNDS).
"""
import json
import math
import sys

import numpy as np

from onebit_adam_reference import MASKED, SIZES, averaged, compressed_allreduce, gradient, padded_size

f32 = np.float32
LR, B1, B2, EPS, WD = f32(0.1), f32(0.9), f32(0.999), f32(1e-8), f32(0.01)
FREEZE, STEPS = 6, 20
MAX_COEFF, MIN_COEFF = float(f32(10.0)), float(f32(0.01))
COEFF_BETA = float(f32(0.8))
FACTOR_MIN, FACTOR_MAX, THRESHOLD = (float(f32(x)) for x in (0.5, 4.0, 0.1))


def norm(x):  # ‖x‖₂ in double, then float32
    return f32(math.sqrt(float(np.dot(x.astype(np.float64), x.astype(np.float64)))))


def apply(p, coeff, update):
    return (p - f32(float(LR) * coeff) * update).astype(f32)


def warmup_tensor(p, m, v, freeze):
    """One tensor's LAMB step; returns the new p, the trust ratio's moving average."""
    update = (m / (np.sqrt(v) + EPS)).astype(f32)
    update = (update + WD * p).astype(f32)
    w, u = norm(p), norm(update)
    coeff = 1.0
    if w != 0 and u != 0:
        coeff = min(max(float(f32(w / u)), MIN_COEFF), MAX_COEFF)
    if coeff != 1.0:
        freeze = COEFF_BETA * freeze + (1 - COEFF_BETA) * coeff
    return apply(p, coeff, update), freeze


# The factor's bounds (factor_min, factor_max, factor_threshold) per case: the
# defaults, which none of them binds on this problem; a lower bound above the
# factor, reached by steps of +5 %; an upper bound below it, reached by steps of −10 %.
BOUNDS = {"params": (0.5, 4.0, 0.1), "params_min_up": (1.5, 4.0, 0.05),
          "params_max_down": (0.5, 0.6, 0.1)}


def compressed_tensor(p, m, last, v, fresh, freeze, last_factor):
    """One tensor's compressed-stage step after the exchange; returns p, fresh, factor."""
    rebuilt = ((m - last * B1) / (f32(1) - B1)).astype(f32)
    fresh = (B2 * fresh + (f32(1) - B2) * rebuilt * rebuilt).astype(f32)
    denom = (np.sqrt(v) + EPS).astype(f32)
    prelim = (m / denom).astype(f32)
    update = (prelim + WD * p).astype(f32)
    factor = float(np.max((denom / (np.sqrt(fresh) + EPS).astype(f32)).astype(f32)))
    ratio = min(1.0, float(f32(norm(prelim) / norm(update))))
    factor = factor * ratio + (1.0 - ratio)
    factor = min(max(factor, FACTOR_MIN), FACTOR_MAX)
    factor = min(factor, last_factor * (1.0 + THRESHOLD))
    factor = max(factor, last_factor * (1.0 - THRESHOLD))
    return apply(p, freeze * factor, update), fresh, factor


def run(world):
    total = sum(SIZES)
    spans = list(zip(np.cumsum([0] + SIZES)[:-1], np.cumsum(SIZES)))
    padded = padded_size(total, world)
    p = (0.1 * np.sin(np.arange(total) + 1.0)).astype(f32)
    m, v, fresh = (np.zeros(total, f32) for _ in range(3))
    freeze = [0.0] * len(SIZES)
    last_factor = [1.0] * len(SIZES)
    scaling = None
    padding = np.zeros(padded - total, f32)
    werr = [np.zeros(padded, f32) for _ in range(world)]
    serr = [np.zeros(padded // world, f32) for _ in range(world)]
    for s in range(1, STEPS + 1):
        grads = [gradient(p, r, s) for r in range(world)]
        if s == 1:
            continue  # DeepSpeed's initialization step
        if s <= max(FREEZE, 2):
            g = averaged(grads, world)
            m = (B1 * m + (f32(1) - B1) * g).astype(f32)
            v = (B2 * v + (f32(1) - B2) * g * g).astype(f32)
            if s == FREEZE:
                fresh = v.copy()
            for t, (b, e) in enumerate(spans):
                p[b:e], freeze[t] = warmup_tensor(p[b:e], m[b:e], v[b:e], freeze[t])
            continue
        last = m.copy()
        if scaling is None:
            rms = [float(norm(m[b:e]) / f32(math.sqrt(e - b))) for b, e in spans]
            united = sum(rms) / len(rms)
            scaling = [united / x for x in rms]
        bufs = []
        for r in range(world):
            mr = (B1 * m + (f32(1) - B1) * grads[r]).astype(f32)
            for t, (b, e) in enumerate(spans):
                mr[b:e] = (mr[b:e] * f32(scaling[t])).astype(f32)
            bufs.append(np.concatenate([mr, padding]))
        out = compressed_allreduce(bufs, werr, serr, world)
        padding = out[total:].copy()
        m = out[:total].copy()
        for t, (b, e) in enumerate(spans):
            m[b:e] = (m[b:e] / f32(scaling[t])).astype(f32)
        m[MASKED[0]:MASKED[1]] = 0
        for t, (b, e) in enumerate(spans):
            p[b:e], fresh[b:e], last_factor[t] = compressed_tensor(
                p[b:e], m[b:e], last[b:e], v[b:e], fresh[b:e], freeze[t], last_factor[t])
    return [float(x) for x in p]


def main():
    global FACTOR_MIN, FACTOR_MAX, THRESHOLD
    world = int(sys.argv[1])
    out = {"world": world, "numpy": np.__version__}
    for key, bounds in BOUNDS.items():
        FACTOR_MIN, FACTOR_MAX, THRESHOLD = (float(f32(x)) for x in bounds)
        out[key] = run(world)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
