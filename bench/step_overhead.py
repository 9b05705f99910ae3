"""The tiny GPT training step (tutorial size: d_model 64, 4 heads, 4 layers, T 16, batch 32) timed in
this process, as a user gets the library (``import tinygrad_tx``, no opt-in calls): median of N steps.

    python -m bench.step_overhead [--steps 60] [--threads 1] [--compiled [--fused]] [--dropout P]

Used to check that a change to the engine costs nothing measurable: run it on two checkouts,
alternating processes (``bench/step_overhead_ab.sh``), and compare the medians. ``--compiled``
times the same step under ``tinygrad_tx.compile`` (recorded at the first of the 5 warm-up steps,
replayed after); ``--fused`` under ``tinygrad_tx.compile(fuse=True)`` (its elementwise chains as
generated C loops). ``--dropout`` sets the model's dropout (default 0.0).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--compiled", action="store_true", help="the step under tinygrad_tx.compile")
    p.add_argument("--fused", action="store_true", help="with --compiled: compile(fuse=True)")
    p.add_argument("--dropout", type=float, default=0.0)
    a = p.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    import numpy as np
    import tinygrad_tx as tg
    from tinygrad_tx.models import GPTLanguageModel

    tg.manual_seed(0)
    model = GPTLanguageModel(27, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=a.dropout)
    opt = tg.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    idx = tg.from_numpy(rng.integers(0, 27, size=(32, 16)))
    tgt = tg.from_numpy(rng.integers(0, 27, size=(32, 16)))

    def step(idx, tgt):
        opt.zero_grad()
        model(idx, tgt)[1].backward()
        opt.step()

    if a.compiled:
        step = tg.compile(step, fullgraph=True, fuse=a.fused)
    times = []
    for i in range(a.steps + 5):
        t0 = time.perf_counter()
        step(idx, tgt)
        if i >= 5:
            times.append(time.perf_counter() - t0)
    print(f"{statistics.median(times) * 1e3:.3f}")


if __name__ == "__main__":
    sys.exit(main())
