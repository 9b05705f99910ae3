"""Float32 accuracy against a float64 oracle: ``python -m bench.accuracy [--quick] [--only a,b]``.

For every component, the same inputs and weights (float32-rounded) are built
three times — tinygrad_tx in float32, PyTorch in float32 and PyTorch in float64
(the oracle) — and each runs one forward and one backward with the same random
cotangent (``loss.backward()`` for scalar losses). For the output and every
gradient, the error is ``rel_err`` = max |x − oracle| / max |oracle| (for a
gradient that is zero in exact arithmetic: max |x − oracle| / the largest
gradient's max |oracle|); a component's error is the worst over its output and
gradients. Reported: ours,
torch's, their ratio (ours / torch), and ours in float64 as a check that the two
implementations compute the same function (it should be ~1e-15).

This process imports both frameworks; nothing here is timed. torch's float32 runs without TF32
(``true_float32``: CUDA matmul and cuDNN flags off, matmul precision 'highest'). Prints one JSON
object on stdout.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .backends import make_backend, true_float32
from .components import REGISTRY, build_case, cotangent, main_components
from .stats import rel_err


def run_case(B, name, cfg, seed):
    """Output and gradients (name -> float64 array) of one forward + backward."""
    case = build_case(B, name, cfg, seed)
    out = case.forward()
    shape = tuple(out.shape)
    g = None if len(shape) == 0 else B.const(cotangent(shape, seed))
    B.backward(out, g)
    result = {"output": B.numpy(out).astype(np.float64)}
    for leaf_name, t in case.leaves:
        gr = B.grad(t)
        result[f"grad[{leaf_name}]"] = np.zeros(tuple(t.shape)) if gr is None else gr.astype(np.float64)
    return result


# A gradient whose oracle is this small relative to the largest gradient of the same case is
# zero in exact arithmetic (e.g. the key-projection bias: adding q·b_k to every score of a
# query leaves its softmax unchanged); its float64 "values" are rounding noise, so relative
# error is meaningless there and the error is measured against the largest gradient instead.
ZERO_GRAD = 1e-9


def item_errors(runs, oracle):
    """{item: {label: error}} and the set of items treated as structurally zero."""
    grad_scale = max((float(np.max(np.abs(v), initial=0.0)) for k, v in oracle.items() if k != "output"),
                     default=0.0)
    detail, zero = {}, set()
    for key, ref in oracle.items():
        scale = float(np.max(np.abs(ref), initial=0.0))
        if key != "output" and grad_scale > 0 and scale <= ZERO_GRAD * grad_scale:
            zero.add(key)
            detail[key] = {label: float(np.max(np.abs(r[key] - ref), initial=0.0)) / grad_scale
                           for label, r in runs.items()}
        else:
            detail[key] = {label: rel_err(r[key], ref) for label, r in runs.items()}
    return detail, zero


def compare(name, cfg, seeds, backends):
    """Worst errors over ``seeds`` (each seed: new inputs, weights and cotangent)."""
    detail, zero = {}, set()
    for i, seed in enumerate(seeds):
        # the float64 check of ours is a wiring check (~1e-15), one seed is enough
        runs = {label: run_case(B, name, cfg, seed) for label, B in backends.items()
                if label != "ours64" or i == 0}
        oracle = runs.pop("torch64")
        d, z = item_errors(runs, oracle)
        zero |= z
        for key, errs in d.items():
            prev = detail.setdefault(key, {})
            for label, e in errs.items():
                prev[label] = max(prev.get(label, 0.0), e)
    labels = {label for errs in detail.values() for label in errs}
    worst = {label: max(d[label] for d in detail.values() if label in d) for label in labels}
    return {"ours": worst["ours32"], "torch": worst["torch32"], "ours_f64": worst.get("ours64"),
            "ratio": (worst["ours32"] / worst["torch32"]) if worst["torch32"] > 0 else
            (0.0 if worst["ours32"] == 0 else float("inf")),
            "worst_item": max(detail, key=lambda k: detail[k]["ours32"]),
            "zero_grads": sorted(zero), "seeds": list(seeds), "detail": detail}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.accuracy")
    ap.add_argument("--quick", action="store_true", help="quick configurations; no float64 check of ours")
    ap.add_argument("--only", default="", help="comma-separated component names")
    ap.add_argument("--seeds", type=int, default=None, help="number of seeds, worst error kept "
                    "(default 3; 1 for training steps and with --quick)")
    ap.add_argument("--cfg", default="", help="JSON {component: cfg} overriding the defaults")
    ap.add_argument("--file", default=None, help="a bench --file: its entries become components")
    args = ap.parse_args(argv)
    if args.file:
        from .userfile import register
        register(args.file, "both")
    names = [n for n in args.only.split(",") if n] or [c.name for c in main_components(args.quick)]
    overrides = json.loads(args.cfg) if args.cfg else {}
    precision = true_float32()   # the float32 error column is judged against true float32 (TF32 off)
    print(f"accuracy: torch float32 reference {precision}", file=sys.stderr)
    backends = {"ours32": make_backend("ours", "float32"), "torch32": make_backend("torch", "float32"),
                "torch64": make_backend("torch", "float64")}
    if not args.quick:  # the float64 sanity check (ours vs the oracle, ~1e-15) is skipped by --quick
        backends["ours64"] = make_backend("ours", "float64")
    results = {}
    for name in names:
        cfg = overrides.get(name) or REGISTRY[name].config(args.quick)
        try:
            n_seeds = args.seeds or (1 if args.quick or REGISTRY[name].kind == "train" else 3)
            results[name] = compare(name, cfg, range(n_seeds), backends)
        except Exception as e:  # a component whose API has not landed: report, continue
            results[name] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(results, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
