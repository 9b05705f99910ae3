"""The per-op table: every op family of the parity suite, forward + backward, float32, at a small
and a large size, against torch in the same run.

    tinygrad-tx bench --file bench/ops_table.py --threads 1          # both sizes (~10 min)
    tinygrad-tx bench --file bench/ops_table.py --threads 1 --quick  # the small size only

The format is the ``--file`` one (bench/README.md): each entry is timed by the bench's two workers
(ours never imports torch: there ``import torch`` below is answered by tinygrad_tx), alternating,
medians, float32 accuracy against a float64 oracle. Each op is written once, against torch's
names, and so runs on both engines. ``bench/ops_table.md`` holds the last run and the reason
beside every op slower than 2x torch.
"""
import numpy as np
import torch
import torch.nn.functional as F

SMALL, LARGE = (64, 256), (1024, 1024)          # 16 K and 1 M elements


def _real(rng, size):
    return [rng.standard_normal(size)]


def _positive(rng, size):
    return [rng.uniform(0.5, 2.0, size)]


def _pair(rng, size):
    return [rng.standard_normal(size), rng.standard_normal(size)]


def _row_bias(rng, size):                       # b broadcast along the rows: its gradient is a sum
    return [rng.standard_normal(size), rng.standard_normal(size[-1:])]


def _labels(rng, size):
    return [rng.standard_normal(size), rng.integers(0, size[-1], size[:-1])]


def _ids(rng, size):
    return [rng.standard_normal((size[-1], 64)), rng.integers(0, size[-1], tuple(size[:-1]) + (16,))]


def _rows(rng, size):                           # a 1-D index with repeats
    return [rng.standard_normal(size), rng.integers(0, size[0], 2 * size[0])]


def _ln(rng, size):
    return [rng.standard_normal(size), 1 + 0.1 * rng.standard_normal(size[-1:]),
            0.1 * rng.standard_normal(size[-1:])]


def _linear(rng, size):
    return [rng.standard_normal(size), rng.standard_normal((size[-1] // 2, size[-1])) / np.sqrt(size[-1]),
            rng.standard_normal(size[-1] // 2)]


def _square(rng, size):
    n = 64 if tuple(size) == SMALL else 512
    return [rng.standard_normal((n, n)), rng.standard_normal((n, n))]


def _batched(rng, size):
    b = 8 if tuple(size) == SMALL else 32
    return [rng.standard_normal((b, 64, 64)), rng.standard_normal((b, 64, 64))]


def _attention(rng, size):
    b, t = (4, 16) if tuple(size) == SMALL else (16, 128)
    return [rng.standard_normal((b, 4, t, 32)) for _ in range(3)]


def _image(rng, size):
    n, c, hw = (4, 8, 16) if tuple(size) == SMALL else (16, 16, 32)
    return [rng.standard_normal((n, c, hw, hw)), rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)]


def _pool_input(rng, size):
    n, c, hw = (4, 8, 16) if tuple(size) == SMALL else (16, 16, 64)
    return [rng.standard_normal((n, c, hw, hw))]


# name -> (function of the inputs, input drawer); the same function runs on both engines
OPS = {
    # pointwise
    "neg": (lambda x: -x, _real),
    "exp": (torch.exp, _real),
    "log": (torch.log, _positive),
    "sqrt": (torch.sqrt, _positive),
    "rsqrt": (torch.rsqrt, _positive),
    "sin": (torch.sin, _real),
    "abs": (torch.abs, _real),
    "tanh": (torch.tanh, _real),
    "sigmoid": (torch.sigmoid, _real),
    "relu": (F.relu, _real),
    "gelu": (F.gelu, _real),
    "gelu(tanh)": (lambda x: F.gelu(x, approximate="tanh"), _real),
    "silu": (F.silu, _real),
    "softplus": (F.softplus, _real),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), _real),
    "x ** 2": (lambda x: x ** 2, _real),
    "x ** 3": (lambda x: x ** 3, _real),
    "x ** 0.5": (lambda x: x ** 0.5, _positive),
    "x * 3.0": (lambda x: x * 3.0, _real),
    # binary
    "add": (lambda a, b: a + b, _pair),
    "mul": (lambda a, b: a * b, _pair),
    "div": (lambda a, b: a / b, lambda rng, size: [rng.standard_normal(size), rng.uniform(0.5, 2.0, size)]),
    "a ** b": (torch.pow, lambda rng, size: [rng.uniform(0.5, 2.0, size), rng.standard_normal(size)]),
    "maximum": (torch.maximum, _pair),
    "add (row bias)": (lambda a, b: a + b, _row_bias),
    "where": (lambda a, b: torch.where(a > 0, a, b), _pair),
    # reductions
    "sum": (lambda x: x.sum(), _real),
    "sum(-1)": (lambda x: x.sum(-1), _real),
    "mean(0)": (lambda x: x.mean(0), _real),
    "var(-1)": (lambda x: x.var(-1), _real),
    "max(-1)": (lambda x: x.max(-1).values, _real),
    "logsumexp(-1)": (lambda x: x.logsumexp(-1), _real),
    "cumsum(-1)": (lambda x: x.cumsum(-1), _real),
    "norm": (lambda x: x.norm(), _real),
    # movement and indexing
    "transpose+contiguous": (lambda x: x.t().contiguous(), _real),
    "reshape": (lambda x: x.reshape(-1, 4), _real),
    "cat": (lambda a, b: torch.cat([a, b], 0), _pair),
    "stack": (lambda a, b: torch.stack([a, b], 1), _pair),
    "x[: ::2] (every 2nd column)": (lambda x: x[:, ::2], _real),
    "index_select": (lambda x, i: x.index_select(0, i), _rows),
    "gather": (lambda x, i: x.gather(-1, i.unsqueeze(-1)), _labels),
    "masked_fill": (lambda x: x.masked_fill(x > 1, 0.0), _real),
    # matmul family
    "matmul": (torch.matmul, _square),
    "bmm": (torch.bmm, _batched),
    "linear": (F.linear, _linear),
    # the Transformer's fused ops
    "softmax(-1)": (lambda x: F.softmax(x, -1), _real),
    "log_softmax(-1)": (lambda x: F.log_softmax(x, -1), _real),
    "cross_entropy": (F.cross_entropy, _labels),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b), _ln),
    "embedding": (lambda w, i: F.embedding(i, w), _ids),
    "sdpa (causal)": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), _attention),
    # convolution and pooling
    "conv2d 3x3": (lambda x, w: F.conv2d(x, w, padding=1), _image),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), _pool_input),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), _pool_input),
}

BENCH = [dict(name=name, ours=fn, torch=fn, inputs=draw, sizes=[SMALL, LARGE], quick_sizes=[SMALL])
         for name, (fn, draw) in OPS.items()]

# Why an op is more than 2x torch (CPU-time ratio, either size). torch runs each of these as one
# vectorised C++ pass (SLEEF) per direction; NumPy offers one pass per ufunc, in one thread.
REASONS = {
    "tanh": "computed in float64 and rounded once (NumPy's float32 tanh is an ulp off, which made the "
            "gradient 1 - y² up to 7x torch's error near saturation): two casts and a float64 pass",
    "sigmoid": "three in-place NumPy passes forward (exp(-abs(x)), 1 + e, a reciprocal with the sign fix-up) "
               "and two backward",
    "gelu": "33 NumPy passes per cache block: NumPy has no float32 erf, so Φ is a degree-8 polynomial "
            "in 1/(1 + p·abs(x)) times exp, fitted for relative error (torch: one pass, degree 5)",
    "gelu(tanh)": "tanh taken through float64 (as tanh) plus ten passes for u, 1 ± t and the derivative",
    "silu": "sigmoid's passes plus x·σ forward; σ(1 + x(1 - σ)) backward in three more",
    "softplus": "log1p(exp(-abs(x))) + max(x, 0): four passes forward; sigmoid's backward",
    "reshape": "the leaf's first gradient is copied into .grad (4 MB); torch keeps it: its reshape "
               "backward gives a new view of the caller's gradient, AccumulateGrad finds that view "
               "unshared and keeps it, so x.grad shares the caller's memory (g.zero_() then zeroes "
               "x.grad, torch 2.13). Ours copies: .grad never aliases an array someone else holds",
    "cat": "the leaf-gradient copy as for reshape (two 4 MB copies), and the fresh 8 MB output "
           "page-faults on every call (NumPy keeps no cache of large blocks)",
    "gather": "np.take_along_axis forward and np.put_along_axis into zeros backward, with index "
              "arrays broadcast by NumPy (torch: one strided kernel)",
    "cumsum(-1)": "backward is the reversed cumulative sum: flip, cumsum, flip (three passes)",
    "softmax(-1)": "five NumPy passes forward (max, subtract, exp, sum, divide) and three backward; "
                   "torch fuses each direction into one or two",
    "log_softmax(-1)": "as softmax: max, subtract, exp, sum, log, subtract forward",
    "cross_entropy": "log_softmax's passes plus the pick of each row's target",
    "layer_norm": "mean, centre, variance, scale, affine: six passes forward and about eight backward "
                  "(torch: one fused row pass each way)",
    "conv2d 3x3": "im2col copies the input nine times (unfold + matmul); torch calls oneDNN's direct "
                  "convolution",
    "max_pool2d": "window views reduced by NumPy plus an argmax scatter backward",
    "avg_pool2d": "window sums by NumPy plus a col2im scatter backward",
}


SMALL_REASON = ("small: our fixed cost per op (Python argument checks and the graph node, 15-30 µs "
                "forward + backward) is most of a 16 K-element op")


def write_table(results_json: str, out_md: str) -> None:
    """bench/ops_table.md from a run's results.json: every op and size, f+b times, the wall and
    CPU-time ratios, and the reason beside every op above 2x torch."""
    import json
    run = json.load(open(results_json))
    meta = run["meta"]
    lines = ["# Per-op table: forward + backward, float32, ours / torch", "",
             f"Generated by `python -m bench.ops_table` ({meta['date']}; {meta['threads']} thread(s); "
             f"load average {meta['loadavg_start'][0]:.1f} at the start, {meta['loadavg_end'][0]:.1f} "
             f"at the end, {meta['cpu_count']} CPUs). Ratio = median ours / median torch over "
             "interleaved rounds in separate processes; the CPU-time ratio (process CPU seconds per "
             "call) is the one to read on a loaded machine. Sizes: 64×256 and 1024×1024 elements "
             "(matmul 64² / 512², bmm 8 / 32 × 64², attention 4×4×16×32 / 16×4×128×32, images "
             "4×8×16² / 16×16×32², pools 4×8×16² / 16×16×64²).", "",
             "| op | size | ours f+b ms | torch f+b ms | ratio | CPU-time ratio | why above 2× |",
             "|---|---|---|---|---|---|---|"]
    for c in run["components"]:
        res = c["results"]
        if "ours" not in res or "torch" not in res:
            continue
        name, size = c["name"].rsplit(" (", 1)
        ours, theirs = res["ours"], res["torch"]
        wall = ours["fwdbwd"]["median"] / theirs["fwdbwd"]["median"]
        cpu = ours["cpu"]["fwdbwd"]["median"] / theirs["cpu"]["fwdbwd"]["median"]
        why = ""
        if cpu > 2.0:
            small = size.startswith("64×256")
            why = REASONS.get(name, SMALL_REASON if small else "(no reason recorded: look into it)")
        lines.append(f"| {name} | {size.rstrip(')')} | {1e3 * ours['fwdbwd']['median']:.3g} | "
                     f"{1e3 * theirs['fwdbwd']['median']:.3g} | {wall:.2f} | {cpu:.2f} | {why} |")
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    import argparse
    import os
    import subprocess
    import sys
    import tempfile

    parser = argparse.ArgumentParser(description="Run the per-op table and write bench/ops_table.md.")
    parser.add_argument("--quick", action="store_true", help="the small size only")
    parser.add_argument("--from-results", help="write the table from an earlier run's results.json")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    results = args.from_results
    if results is None:
        out = tempfile.mkdtemp(prefix="ops_table_")
        cmd = [sys.executable, "-m", "tinygrad_tx", "bench", "--file", os.path.join(here, "ops_table.py"),
               "--threads", "1", "--out", out] + (["--quick"] if args.quick else [])
        subprocess.run(cmd, check=True)
        results = os.path.join(out, "results.json")
    write_table(results, os.path.join(here, "ops_table.md"))
    print(f"wrote {os.path.join(here, 'ops_table.md')}")
