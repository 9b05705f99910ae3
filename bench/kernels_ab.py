"""Per-op forward + backward (and one AdamW / SGD step over 2^20 parameters), ours with C kernels vs ours on the NumPy path vs torch eager, same process.

    OMP_NUM_THREADS=1 PYTHONPATH=. python -m bench.kernels_ab [--shape 512,256] [--threads 1]

A quick A/B for ``tinygrad_tx/kernels`` (issue 33): (512, 256) float32 by default, one thread,
medians of per-call CPU time (``time.process_time``), random cotangent; the kernel path and the NumPy path alternate in
rounds (``TINYGRAD_TX_KERNELS`` toggled and ``kernels.reset()``), torch timed between them. The
separate-process benchmark (``tinygrad-tx bench``) is the one targets are judged by.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="512,256")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated ops (default: all)")
    args = ap.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split(","))
    import torch
    import tinygrad_tx as tg
    import tinygrad_tx.nn.functional as F
    from tinygrad_tx import kernels
    torch.set_num_threads(args.threads)
    tg.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal(shape[-1:]) * 0.5 + 1).astype(np.float32)
    b = rng.standard_normal(shape[-1:]).astype(np.float32)
    ops = {
        "gelu": (lambda X, W, B: F.gelu(X), lambda X, W, B: torch.nn.functional.gelu(X)),
        "gelu(tanh)": (lambda X, W, B: F.gelu(X, approximate="tanh"),
                       lambda X, W, B: torch.nn.functional.gelu(X, approximate="tanh")),
        "layer_norm": (lambda X, W, B: F.layer_norm(X, shape[-1:], W, B),
                       lambda X, W, B: torch.nn.functional.layer_norm(X, shape[-1:], W, B)),
        "softmax": (lambda X, W, B: F.softmax(X, -1), lambda X, W, B: torch.nn.functional.softmax(X, -1)),
        "log_softmax": (lambda X, W, B: F.log_softmax(X, -1), lambda X, W, B: torch.nn.functional.log_softmax(X, -1)),
        "cross_entropy": (lambda X, W, B: F.cross_entropy(X, tg.from_numpy(labels)),
                          lambda X, W, B: torch.nn.functional.cross_entropy(X, torch.from_numpy(labels))),
        "sigmoid": (lambda X, W, B: X.sigmoid(), lambda X, W, B: torch.sigmoid(X)),
        "silu": (lambda X, W, B: F.silu(X), lambda X, W, B: torch.nn.functional.silu(X)),
        "softplus": (lambda X, W, B: F.softplus(X), lambda X, W, B: torch.nn.functional.softplus(X)),
        "rms_norm": (lambda X, W, B: F.rms_norm(X, shape[-1:], W), lambda X, W, B: torch.nn.functional.rms_norm(X, shape[-1:], W)),
        "erf": (lambda X, W, B: X.erf(), lambda X, W, B: torch.erf(X)),
        "erfc": (lambda X, W, B: X.erfc(), lambda X, W, B: torch.erfc(X)),
        "x**2": (lambda X, W, B: X ** 2, lambda X, W, B: X ** 2),
        "x**3": (lambda X, W, B: X ** 3, lambda X, W, B: X ** 3),
        "x**-1": (lambda X, W, B: X ** -1, lambda X, W, B: X ** -1),
        "x**-2": (lambda X, W, B: X ** -2, lambda X, W, B: X ** -2),
        "x**4": (lambda X, W, B: X ** 4, lambda X, W, B: X ** 4),
        "x**5": (lambda X, W, B: X ** 5, lambda X, W, B: X ** 5),
        "x+dropout": (lambda X, W, B: tg.from_numpy(res).requires_grad_() + F.dropout(X, 0.1),
                      lambda X, W, B: torch.from_numpy(res).requires_grad_() + torch.nn.functional.dropout(X, 0.1)),
        "dropout_add": (lambda X, W, B: dropout_add(tg.from_numpy(res).requires_grad_(), X, 0.1),
                        lambda X, W, B: torch.from_numpy(res).requires_grad_() + torch.nn.functional.dropout(X, 0.1)),
        "adamw": (None, None),
        "sgd": ("sgd", "sgd"),
    }
    labels = rng.integers(0, shape[-1], shape[0])
    res = rng.standard_normal(shape).astype(np.float32)        # the residual of dropout_add
    from tinygrad_tx.functional.activation import dropout_add

    n_params = 1 << 20          # AdamW: one step over a million float32 parameters (4 tensors)

    def ours_adamw():
        ps = [tg.nn.Parameter(tg.from_numpy(a.copy())) for a in np.split(rng.standard_normal(n_params).astype(np.float32), 4)]
        for p in ps:
            p.grad = tg.from_numpy(rng.standard_normal(p.shape).astype(np.float32))
        opt = tg.optim.AdamW(ps, lr=1e-3, weight_decay=0.01)
        return opt.step

    def torch_adamw():
        ps = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in np.split(rng.standard_normal(n_params).astype(np.float32), 4)]
        for p in ps:
            p.grad = torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32))
        opt = torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01)
        return opt.step

    def ours_sgd():            # SGD, momentum 0.9, weight decay 1e-4: one step over 2^20 float32 parameters
        ps = [tg.nn.Parameter(tg.from_numpy(a.copy())) for a in np.split(rng.standard_normal(n_params).astype(np.float32), 4)]
        for p in ps:
            p.grad = tg.from_numpy(rng.standard_normal(p.shape).astype(np.float32))
        opt = tg.optim.SGD(ps, lr=1e-3, momentum=0.9, weight_decay=1e-4)
        opt.step()             # the momentum buffers exist: the steady-state step is timed
        return opt.step

    def torch_sgd():
        ps = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in np.split(rng.standard_normal(n_params).astype(np.float32), 4)]
        for p in ps:
            p.grad = torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32))
        opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, weight_decay=1e-4)
        opt.step()
        return opt.step

    def ours_step(fn):
        if fn == "sgd":
            return ours_sgd()
        if fn is None:
            return ours_adamw()
        X = tg.from_numpy(x).requires_grad_()
        W, B = tg.from_numpy(w).requires_grad_(), tg.from_numpy(b).requires_grad_()
        G = tg.from_numpy(g)

        def run():
            y = fn(X, W, B)
            y.backward(G if y.ndim else None)
        return run

    def torch_step(fn):
        if fn == "sgd":
            return torch_sgd()
        if fn is None:
            return torch_adamw()
        X = torch.from_numpy(x).requires_grad_()
        W, B = torch.from_numpy(w).requires_grad_(), torch.from_numpy(b).requires_grad_()
        G = torch.from_numpy(g)

        def run():
            y = fn(X, W, B)
            y.backward(G if y.ndim else None)
        return run

    def timed(run):
        run()
        t = time.process_time()            # CPU time: steadier than wall clock on a shared machine
        for _ in range(args.calls):
            run()
        return (time.process_time() - t) / args.calls

    def set_path(on):
        os.environ["TINYGRAD_TX_KERNELS"] = "auto" if on else "0"
        kernels.reset()

    set_path(True)
    print(f"shape {shape} float32, {args.threads} thread(s), medians of {args.rounds} rounds x {args.calls} calls, CPU time; "
          f"kernels: {kernels.mode()}")
    print(f"{'op':12s} {'kernels µs':>11s} {'numpy µs':>9s} {'torch µs':>9s} {'kern/torch':>10s} {'numpy/torch':>11s} {'numpy/kern':>10s}")
    for name, (ours, theirs) in ops.items():
        if args.only and name not in args.only.split(","):
            continue
        k, n, t = [], [], []
        for _ in range(args.rounds):
            set_path(True)
            k.append(timed(ours_step(ours)))
            t.append(timed(torch_step(theirs)))
            set_path(False)
            n.append(timed(ours_step(ours)))
        set_path(True)
        mk, mn, mt = (statistics.median(v) * 1e6 for v in (k, n, t))
        print(f"{name:12s} {mk:11.0f} {mn:9.0f} {mt:9.0f} {mk / mt:10.2f} {mn / mt:11.2f} {mn / mk:10.2f}")


if __name__ == "__main__":
    main()
