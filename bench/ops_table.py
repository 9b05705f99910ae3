"""The per-op table: every op of the op database (reference/opdb.py) with a first derivative and
float32, forward + backward, float32, at a small and a large size, against torch in the same run;
and a few ``nn.functional`` ops the database does not hold (``EXTRA``).

    tinygrad-tx bench --file bench/ops_table.py --threads 1          # both sizes (long: ~200 rows)
    tinygrad-tx bench --file bench/ops_table.py --threads 1 --quick  # the small size only
    tinygrad-tx bench --file bench/ops_table.py --threads 1 --quick --only "exp (64×256),matmul (64×256)"

The format is the ``--file`` one (bench/README.md): each entry is timed by the bench's two workers
(ours never imports torch: there ``import torch`` below is answered by tinygrad_tx, and the database
imports no torch), alternating, medians, float32 accuracy against a float64 oracle. Each row runs the
entry's ``call(torch, ...)``, the op written once against torch's names, on both engines.
``bench/ops_table.md`` holds the last run and the reason beside every op slower than 2x torch.

How an entry's inputs reach the table's sizes (SMALL = 64×256, LARGE = 1024×1024 elements):

* an entry whose sample generator takes a size (``unary``, ``binary``, ``same_shape``,
  ``reduction``, ``ternary``: the pointwise ops and the reductions) draws one contiguous sample of
  that size from it (a reduction reduces over its generator's first ``dims``);
* an entry with explicit cases (``shapes_of``) takes its first case without an empty array and
  with a dim above 1 (``atleast_1d``: the (3,) case, not the 0-d one) and scales it by its
  family's rule (:func:`scaled`):

  - ``matmul``: every matrix dim (the last two) above 1 times k, k = n // (the largest one),
    n = 64 / 512; ``matmul``
    and ``mm`` themselves are n×n @ n×n squares and ``bmm`` 8 / 32 × 64² batches, as before;
  - ``convolution`` (an input of 3+ dims): the input's batch is 4 / 16 and each spatial side
    16 / 32 for images (64 / 256 for 1-d signals); channels, weights and the rest as the case has them;
  - ``linalg``: n×n matrices, n = 64 / 256, drawn as I + 0.5·G/√n (det ≈ 1, well conditioned);
  - every other family: every dim above 1 times k, the largest k with the biggest array at most
    the size's element count; integer arguments (dims, index arrays, counts) are kept as they are,
    unless ``CASES`` gives the entry a case of its own (its integers depend on the shapes);

* the first case's layouts (transposed, view of a view) are not reproduced: every input is contiguous;
* a float argument the entry does not differentiate (``grad_args``: ``where``'s condition,
  ``expand_as``'s shape donor) is passed as its sign, an int64 array: the bench differentiates
  every float input.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

SMALL, LARGE = (64, 256), (1024, 1024)          # 16 K and 1 M elements


def _load_opdb():
    """reference/opdb.py by its path: ``import reference`` would run the package's ``__init__``,
    which imports the torch twins (and, in the ours worker, would build them on tinygrad_tx)."""
    import importlib.util
    name = "_ops_table_opdb"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference", "opdb.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module                 # dataclasses look their module up while they are made
        spec.loader.exec_module(module)
    return sys.modules[name]


opdb = _load_opdb()


def _is_spec(s):
    return isinstance(s, tuple) and len(s) >= 2 and isinstance(s[0], tuple)


def _numel(shape):
    return int(np.prod(shape)) if shape else 1


def _times(shape, k):
    return tuple(d * k if d > 1 else d for d in shape)


def _small(size):
    return tuple(size) == SMALL


def _index(shape, n):
    """A fixed int64 index array of ``shape`` with values in [0, n), repeats included."""
    return (np.arange(_numel(shape)) * 7919 % n).reshape(shape)


def _distinct_rows(size):
    """(rows, cols // 2) column indices, distinct within each row (scatter: one writer per element)."""
    rows, half = size[0], size[1] // 2
    return (np.arange(half)[None, :] * 2 + np.arange(rows)[:, None] % 2).astype(np.int64)


# per-entry cases whose integer arguments depend on the shapes: size -> (specs, kwargs)
CASES = {
    "reshape": lambda size: ([(tuple(size), "real"), -1, 4], {}),
    "view": lambda size: ([(tuple(size), "real"), 4, -1], {}),
    "unflatten": lambda size: ([(tuple(size), "real"), 1, (4, -1)], {}),
    "expand": lambda size: ([((size[0], 1), "real"), size[0], size[1]], {}),
    "split": lambda size: ([(tuple(size), "real"), size[0] // 4], {}),
    "index_add": lambda size: ([(tuple(size), "real"), 0, np.arange(size[0])[::-1].copy(), (tuple(size), "real")], {}),
    "index_copy": lambda size: ([(tuple(size), "real"), 0, np.arange(size[0] // 2) * 2, ((size[0] // 2, size[1]), "real")],
                                {}),
    "masked_scatter": lambda size: ([(tuple(size), "real"), ((_numel(size),), "real")], {}),
    "broadcast_to": lambda size: ([((size[0], 1), "real"), (2, size[0], size[1])], {}),
    "broadcast_tensors": lambda size: ([((size[0], 1), "real"), ((1, size[1]), "real")], {}),
    "meshgrid": lambda size: ([((size[0],), "real"), ((size[1],), "real")], {}),
    "narrow": lambda size: ([(tuple(size), "real"), 0, 1, size[0] // 2], {}),
    "prod": lambda size: ([((_numel(size) // 8, 8), "away")], {"dim": -1}),     # a product of 8: no overflow
    "gather": lambda size: ([(tuple(size), "real"), 1, _index((size[0], size[1] // 2), size[1])], {}),
    "take": lambda size: ([(tuple(size), "real"), _index((size[0], size[1] // 2), _numel(size))], {}),
    "take_along_dim": lambda size: ([(tuple(size), "real"), _index((size[0], size[1] // 2), size[1])], {"dim": 1}),
    "index_select": lambda size: ([(tuple(size), "real"), 0, _index((2 * size[0],), size[0])], {}),
    "scatter": lambda size: ([(tuple(size), "real"), 1, _distinct_rows(size), ((size[0], size[1] // 2), "real")], {}),
    "scatter_add": lambda size: ([(tuple(size), "real"), 1, _index((size[0], size[1] // 2), size[1]),
                                  ((size[0], size[1] // 2), "real")], {}),
    "scatter_reduce": lambda size: ([(tuple(size), "real"), 1, _index((size[0], size[1] // 2), size[1]),
                                     ((size[0], size[1] // 2), "real"), "sum"], {}),
    "index_put": lambda size: ([(tuple(size), "real"), np.arange(size[0] // 2) * 2,
                                ((size[0] // 2, size[1]), "real")], {}),
    "embedding": lambda size: ([_index((size[0], 16), size[1]), ((size[1], 64), "real")], {}),
    "diag_embed": lambda size: ([((_numel(size) // 16, 16), "real")], {}),     # its output is 16x its input
    "layer_norm": lambda size: ([((_numel(size) // 4, 4), "real"), ((4,), "real"), ((4,), "real")], {}),
    "rms_norm": lambda size: ([((_numel(size) // 4, 4), "real"), ((4,), "real")], {}),
}


def scaled(op, size):
    """The entry's case at ``size``: ``(specs, kwargs)`` (the rules in the module docstring)."""
    if op.name in CASES:
        return CASES[op.name](size)
    full = [(sp, kw) for sp, kw in op.samples.cases if not any(_is_spec(s) and _numel(s[0]) == 0 for s in sp)]
    specs, kwargs = next(((sp, kw) for sp, kw in full if any(_is_spec(s) and max(s[0], default=1) > 1 for s in sp)),
                         full[0])
    specs = [(s[0], s[1]) if _is_spec(s) else s for s in specs]          # contiguous
    floats = [s for s in specs if _is_spec(s)]
    if op.family == "linalg":
        n = 64 if _small(size) else 256
        return [(s[0][:-2] + (n, n), "bench_matrix") if _is_spec(s) else s for s in specs], kwargs
    if op.family == "convolution" and _is_spec(specs[0]) and len(specs[0][0]) >= 3:
        batch, side = (4, 16) if _small(size) else (16, 32)
        shape = specs[0][0]
        spatial = (side,) * (len(shape) - 2) if len(shape) > 3 else (side * side // 4,)
        return [((batch, shape[1]) + spatial, specs[0][1])] + specs[1:], kwargs
    big = max(_numel(s[0]) for s in floats)
    big_shape = next(s[0] for s in floats if _numel(s[0]) == big)
    if op.family == "matmul":                    # the matrix dims only: a batch keeps its count
        k = max(1, (64 if _small(size) else 512) // max(big_shape[-2:]))
        return [(s[0][:-2] + _times(s[0][-2:], k), s[1]) if _is_spec(s) else s for s in specs], kwargs
    else:
        m = sum(d > 1 for d in big_shape)
        k = max(1, int((_numel(size) / big) ** (1 / m))) if m else 1
        while k > 1 and _numel(_times(big_shape, k)) > _numel(size):
            k -= 1
    return [(_times(s[0], k), s[1]) if _is_spec(s) else s for s in specs], kwargs


def _draw(shape, rng, domain):
    if domain == "bench_matrix":
        n = shape[-1]
        return np.eye(n) + 0.5 * rng.standard_normal(shape) / np.sqrt(n)
    return opdb.draw(shape, rng, domain, "float64")


def _specs_at(op, size):
    """The specs and kwargs ``op`` is drawn from at ``size`` (None: a generator that takes a size)."""
    return scaled(op, size) if op.name in CASES or hasattr(op.samples, "cases") else None


def sample_at(op, size, seed):
    """``(args, kwargs)`` of ``op`` at ``size``: NumPy arrays (float: differentiated; the others
    constants) and plain values, in argument order."""
    at = _specs_at(op, size)
    if at is not None:
        specs, kwargs = at
        rng = np.random.default_rng(seed)
        args = [_draw(s[0], rng, s[1]) if _is_spec(s) else s for s in specs]
    else:
        s = op.samples("float64", seed, size=tuple(size))[0]
        args, kwargs = list(s.args), s.kwargs
    floats = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    for i in floats:
        if op.grad_args is not None and i not in op.grad_args:
            args[i] = np.sign(args[i]).astype(np.int64)
    return args, dict(kwargs)


def _square(rng, size):
    n = 64 if _small(size) else 512
    return [rng.standard_normal((n, n)), rng.standard_normal((n, n))]


def _batched(rng, size):
    b = 8 if _small(size) else 32
    return [rng.standard_normal((b, 64, 64)), rng.standard_normal((b, 64, 64))]


SPECIAL = {"matmul": _square, "mm": _square, "bmm": _batched}       # name -> inputs(rng, size)


def row(op):
    """One ``--file`` entry for ``op``: the arrays of :func:`sample_at` are the inputs, its plain
    values and keyword arguments (the same at every size) are put back by the callable."""
    if op.name in SPECIAL:
        def fn(*ts):
            return op.run(torch, *ts)
        return dict(name=op.name, ours=fn, torch=fn, inputs=SPECIAL[op.name], sizes=[SMALL, LARGE],
                    quick_sizes=[SMALL])
    # the plain values may depend on the size (expand's sizes): one template per size, found by
    # the shapes of the arrays the callable is given
    templates = {}
    for size in (SMALL, LARGE):
        at = _specs_at(op, size)
        if at is None:                           # a generator's plain values and kwargs: one for every size
            args, kwargs = sample_at(op, SMALL, 0)
            templates = {None: ([None if isinstance(a, np.ndarray) else a for a in args], kwargs)}
            break
        specs, kwargs = at
        shapes = tuple(tuple(s[0]) if _is_spec(s) else tuple(s.shape) for s in specs
                       if _is_spec(s) or isinstance(s, np.ndarray))
        templates[shapes] = ([None if _is_spec(s) or isinstance(s, np.ndarray) else s for s in specs], kwargs)

    def fn(*ts):
        slots, kwargs = templates.get(None) or templates[tuple(tuple(t.shape) for t in ts)]
        it = iter(ts)
        return op.run(torch, *[next(it) if s is None else s for s in slots], **kwargs)

    def inputs(rng, size):
        args, _ = sample_at(op, size, int(rng.integers(2 ** 31)))
        return [a for a in args if isinstance(a, np.ndarray)]

    return dict(name=op.name, ours=fn, torch=fn, inputs=inputs, sizes=[SMALL, LARGE], quick_sizes=[SMALL])


def _real(rng, size):
    return [rng.standard_normal(size)]


def _labels(rng, size):
    return [rng.standard_normal(size), rng.integers(0, size[-1], size[:-1])]


def _linear(rng, size):
    return [rng.standard_normal(size), rng.standard_normal((size[-1] // 2, size[-1])) / np.sqrt(size[-1]),
            rng.standard_normal(size[-1] // 2)]


def _attention(rng, size):
    b, t = (4, 16) if _small(size) else (16, 128)
    return [rng.standard_normal((b, 4, t, 32)) for _ in range(3)]


def _pool_input(rng, size):
    n, c, hw = (4, 8, 16) if _small(size) else (16, 16, 64)
    return [rng.standard_normal((n, c, hw, hw))]


# nn.functional ops the database does not hold (it covers the top-level functions and Tensor
# methods): name -> (function of the inputs, input drawer)
EXTRA = {
    "silu": (F.silu, _real),
    "softplus": (F.softplus, _real),
    "gelu(tanh)": (lambda x: F.gelu(x, approximate="tanh"), _real),
    "linear": (F.linear, _linear),
    "cross_entropy": (F.cross_entropy, _labels),
    "sdpa (causal)": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), _attention),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), _pool_input),
}

DB_OPS = [op for op in opdb.OPS if op.grad and "float32" in op.dtypes]

# The rows whose op runs a C kernel (tinygrad_tx/kernels, KERNELS_OF): timed a third time on the
# NumPy path (TINYGRAD_TX_KERNELS=0, the bench's ``ours_numpy`` worker), the table's "NumPy path" column.
KERNEL_BACKED = {"erf", "erfc", "sigmoid", "gelu", "softmax", "log_softmax", "pow", "layer_norm", "rms_norm",
                 "silu", "softplus", "gelu(tanh)", "cross_entropy", "sdpa (causal)"}

BENCH = [dict(row(op), numpy_path=op.name in KERNEL_BACKED) for op in DB_OPS] + [
    dict(name=name, ours=fn, torch=fn, inputs=draw, sizes=[SMALL, LARGE], quick_sizes=[SMALL],
         numpy_path=name in KERNEL_BACKED)
    for name, (fn, draw) in EXTRA.items()]

# Why an op is more than 2x torch (CPU-time ratio, either size). torch runs each of these as one
# vectorised C++ pass (SLEEF) per direction; NumPy offers one pass per ufunc, in one thread. (The
# kernel-backed ops' NumPy-pass reasons went with the kernels: their NumPy path is its own column.)
REASONS = {
    "tanh": "computed in float64 and rounded once (NumPy's float32 tanh is an ulp off, which made the "
            "gradient 1 - y² up to 7x torch's error near saturation): two casts and a float64 pass",
    "reshape": "the leaf's first gradient is copied into .grad (4 MB); torch keeps it: its reshape "
               "backward gives a new view of the caller's gradient, AccumulateGrad finds that view "
               "unshared and keeps it, so x.grad shares the caller's memory (g.zero_() then zeroes "
               "x.grad, torch 2.13). Ours copies: .grad never aliases an array someone else holds",
    "cat": "the leaf-gradient copy as for reshape (two 4 MB copies), and the fresh 8 MB output "
           "page-faults on every call (NumPy keeps no cache of large blocks)",
    "gather": "np.take_along_axis forward and np.put_along_axis into zeros backward, with index "
              "arrays broadcast by NumPy (torch: one strided kernel)",
    "cumsum": "backward is the reversed cumulative sum: flip, cumsum, flip (three passes)",
    "conv2d": "im2col copies the input nine times (unfold + matmul); torch calls oneDNN's direct "
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
             "call) is the one to read on a loaded machine. Rows: every op of the op database "
             "(reference/opdb.py) with a derivative and float32, and the nn.functional extras. Sizes: "
             "64×256 and 1024×1024 elements, each entry's inputs scaled to them by the rules in "
             "bench/ops_table.py's docstring (matmul 64² / 512², bmm 8 / 32 × 64², attention "
             "4×4×16×32 / 16×4×128×32, convolution inputs batch 4 / 16 with image sides 16 / 32 "
             "and signal lengths 64 / 256, avg_pool2d 4×8×16² / 16×16×64²).", "",
             "Kernel-backed rows (the op runs a generated C kernel, as a user gets it) are timed a third "
             "time in a worker with `TINYGRAD_TX_KERNELS=0`: the *NumPy path* column, its f+b ms and ratio "
             "to torch in brackets.", "",
             "| op | size | ours f+b ms | torch f+b ms | ratio | CPU-time ratio | NumPy path f+b ms (ratio) | why above 2× |",
             "|---|---|---|---|---|---|---|---|"]
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
            if name in KERNEL_BACKED:
                why = SMALL_REASON if small else "(the C kernel's path: no reason recorded: look into it)"
            else:
                why = REASONS.get(name, SMALL_REASON if small else "(no reason recorded: look into it)")
        slow = res.get("ours_numpy", {}).get("fwdbwd")
        numpy_path = "" if slow is None else \
            f"{1e3 * slow['median']:.3g} ({slow['median'] / theirs['fwdbwd']['median']:.2f})"
        lines.append(f"| {name} | {size.rstrip(')')} | {1e3 * ours['fwdbwd']['median']:.3g} | "
                     f"{1e3 * theirs['fwdbwd']['median']:.3g} | {wall:.2f} | {cpu:.2f} | {numpy_path} | {why} |")
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
