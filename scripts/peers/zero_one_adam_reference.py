#!/usr/bin/env python3
"""Reference values for tests/mpi/zero_one_adam_cases.h: DeepSpeed's ZeroOneAdam
(deepspeed/runtime/fp16/onebit/zoadam.py, 0/1 Adam) written from its
description in NumPy (float32, as torch computes it), every one of W ranks
simulated with its own parameters (local steps make them differ between
synchronisations), on onebit_adam_reference.py's problem and compressed
all-reduce.

    /work/peers-venv/bin/python scripts/peers/zero_one_adam_reference.py 2 > tests/mpi/data/zero_one_adam_np2.json
    /work/peers-venv/bin/python scripts/peers/zero_one_adam_reference.py 4 > tests/mpi/data/zero_one_adam_np4.json

lr 1e-2, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, var_freeze_step 8,
var_update_scaler 2, local_step_scaler 3, local_step_clipper 4, 28 steps:
step 1 initializes; steps 2..9 the variance phase (variance steps 2, 3, 4, 6,
8 on averaged gradients; 5, 7, 9 on compressed ones); steps 10..28 local
steps, synchronised at 10, 11, 12, 14, 16, 20, 24 and 28.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onebit_adam_reference import SIZES, MASKED, averaged, compressed_allreduce, gradient, new_errors  # noqa: E402

f32 = np.float32
LR, B1, B2, EPS, WD = f32(1e-2), f32(0.9), f32(0.999), f32(1e-8), f32(0.01)
VAR_FREEZE, VAR_SCALER, LOCAL_SCALER, LOCAL_CLIPPER, STEPS = 8, 2, 3, 4, 28


def average(xs, errors, world):
    """Every rank's x averaged tensor by tensor, compressed, masked."""
    starts = np.cumsum([0] + SIZES)
    out = np.zeros_like(xs[0])
    for t, (b, e) in enumerate(zip(starts[:-1], starts[1:])):
        out[b:e] = compressed_allreduce([x[b:e] for x in xs], errors[t][0], errors[t][1], world)
    out[MASKED[0]:MASKED[1]] = 0
    return out


def main():
    world = int(sys.argv[1])
    total = sum(SIZES)
    p = [(0.1 * np.sin(np.arange(total) + 1.0)).astype(f32) for _ in range(world)]
    m = [np.zeros(total, f32) for _ in range(world)]
    v = [np.zeros(total, f32) for _ in range(world)]
    acc = [np.zeros(total, f32) for _ in range(world)]
    errors = new_errors(world)
    var_interval, var_counter, local_interval, local_counter, lrs = 1, 0, 1, 0, 0.0
    freeze_key = False
    for s in range(1, STEPS + 1):
        grads = [gradient(p[r], r, s) for r in range(world)]
        if s == 1:
            continue  # the initialization step: buffers made, nothing updated
        if not freeze_key:
            if s % var_interval == 0:  # the engine all-reduced (averaged) the gradients
                g = averaged(grads, world)
                for r in range(world):
                    v[r] = (B2 * v[r] + (1 - B2) * g * g).astype(f32)
                    m[r] = (B1 * m[r] + (1 - B1) * g).astype(f32)
            else:
                g = average(grads, errors, world)
                for r in range(world):
                    m[r] = (B1 * m[r] + (1 - B1) * g).astype(f32)
        else:
            for r in range(world):
                m[r] = (B1 * m[r] + (1 - B1) * grads[r]).astype(f32)
            lrs += float(LR)
        for r in range(world):
            update = (m[r] / (np.sqrt(v[r]) + EPS) + WD * p[r]).astype(f32)
            p[r] = (p[r] - LR * update).astype(f32)
            if freeze_key:
                acc[r] = (acc[r] - LR * update).astype(f32)
        if freeze_key and s % local_interval == 0:
            for r in range(world):
                p[r] = (p[r] - acc[r]).astype(f32)
                acc[r] = (acc[r] * (np.sqrt(v[r]) + EPS)).astype(f32)
            a = average(acc, errors, world)
            for r in range(world):
                m[r] = (-(a / f32(lrs))).astype(f32)
                p[r] = (p[r] + a / (np.sqrt(v[r]) + EPS)).astype(f32)
                acc[r] = np.zeros(total, f32)
            lrs = 0.0
        if not freeze_key:
            if s % var_interval == 0:
                var_counter += 1
                if var_counter == VAR_SCALER:
                    var_counter, var_interval = 0, var_interval * 2
        else:
            local_counter += 1
            if local_counter == LOCAL_SCALER:
                local_counter, local_interval = 0, min(LOCAL_CLIPPER, local_interval * 2)
        if s > VAR_FREEZE and not freeze_key:
            freeze_key = True
            errors = new_errors(world)  # DeepSpeed zeroes them once, on freezing
    # Undoing the local updates (p - acc) rounds on each rank: after a
    # synchronisation the ranks agree to a few float32 ulps, not bit for bit.
    spread = max(float(np.max(np.abs(p[r] - p[0]))) for r in range(world))
    json.dump({"world": world, "numpy": np.__version__, "rank_spread": spread,
               "params": [[float(x) for x in p[r]] for r in range(world)]}, sys.stdout)


if __name__ == "__main__":
    main()
