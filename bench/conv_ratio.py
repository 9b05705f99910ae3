"""conv2d forward+backward: tinygrad_tx's time over torch's at a LeNet-sized and a CIFAR-sized layer.

Usage (from the repository root)::

    python -m bench.conv_ratio                       # 8 rounds, 1 thread, both layers
    python -m bench.conv_ratio --rounds 12 --calls 20 --threads 1 --layers lenet cifar

Layers (float32, stride 1, bias, gradients of input, weight and bias):

* ``lenet``: batch 64, 1 -> 6 channels, 28 x 28, 5 x 5, no padding (LeNet-5's first layer);
* ``cifar``: batch 32, 64 -> 64 channels, 32 x 32, 3 x 3, padding 1.

Each round runs one fresh process per framework, in alternating order (ours first on even
rounds, torch first on odd ones), each started with ``setsid`` (its own session: a signal to the
benchmark's terminal does not reach it mid-measurement) and with every BLAS/OpenMP pool limited
to ``--threads`` (``OMP_NUM_THREADS`` & co. set before the child imports anything; torch's
``set_num_threads`` and tinygrad_tx's pool too). A process builds the layer's inputs from the
same seeded NumPy arrays, makes ``--warmup`` untimed calls, then times ``--calls`` calls of
``out = conv2d(x, w, b); out.backward(g)`` (gradients reset to None between calls) and reports
their median (wall clock, and process CPU time: less sensitive to other processes on a shared
machine). The ours process never imports torch. Reported per layer: the median over rounds of each
framework's per-process median, the ratio ours / torch of those medians, the median of the
per-round ratios and the ratio of the CPU-time medians; ``uptime`` (the load averages) is printed
before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

LAYERS = {
    "lenet": dict(batch=64, c_in=1, c_out=6, image=28, k=5, pad=0),
    "cifar": dict(batch=32, c_in=64, c_out=64, image=32, k=3, pad=1),
}


def arrays(layer: str):
    """The layer's float32 (x, weight, bias, cotangent), seeded: identical in both processes."""
    import numpy as np
    c = LAYERS[layer]
    rng = np.random.default_rng(0)
    fan_in = c["c_in"] * c["k"] ** 2
    out = c["image"] + 2 * c["pad"] - c["k"] + 1
    x = rng.standard_normal((c["batch"], c["c_in"], c["image"], c["image"])).astype(np.float32)
    w = (rng.standard_normal((c["c_out"], c["c_in"], c["k"], c["k"])) / fan_in ** 0.5).astype(np.float32)
    b = (0.1 * rng.standard_normal(c["c_out"])).astype(np.float32)
    g = rng.standard_normal((c["batch"], c["c_out"], out, out)).astype(np.float32)
    return x, w, b, g


def worker(framework: str, layer: str, calls: int, warmup: int, threads: int) -> dict:
    """Time ``calls`` forward+backward calls in this process; returns the median (seconds)."""
    x, w, b, g = arrays(layer)
    pad = LAYERS[layer]["pad"]
    if framework == "torch":
        import torch
        torch.set_num_threads(threads)
        lib, F = torch, torch.nn.functional
        leaves = [torch.from_numpy(a).requires_grad_() for a in (x, w, b)]
        cot = torch.from_numpy(g)
    else:
        import tinygrad_tx as lib
        from tinygrad_tx import functional as F
        from tinygrad_tx import parallel
        parallel.set_num_threads(threads)
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        cot = lib.tensor(g)

    def call():
        for t in leaves:
            t.grad = None
        F.conv2d(*leaves, padding=pad).backward(cot)

    return {"framework": framework, "layer": layer, **time_calls(call, calls, warmup), "threads": threads,
            "torch_threads": lib.get_num_threads() if framework == "torch" else None}


def time_calls(call, calls: int, warmup: int) -> dict:
    """``warmup`` untimed calls, then the medians of ``calls`` timed ones (seconds): wall clock
    (``median``) and process CPU time (``cpu_median``)."""
    import time
    for _ in range(warmup):
        call()
    times, cpu = [], []
    for _ in range(calls):
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"median": statistics.median(times), "cpu_median": statistics.median(cpu)}


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def run_worker(module: str, worker_args: list, threads: int, label: str) -> dict:
    """``python -m module --worker ...`` in a fresh process of its own session (``setsid``), every
    thread pool limited to ``threads``; returns the JSON its last line prints."""
    from .protocol import REPO_ROOT, child_env
    cmd = ["setsid", "-w", sys.executable, "-m", module, "--worker", *worker_args, "--threads", str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=str(REPO_ROOT), env=child_env(threads),
                          timeout=600)
    if done.returncode:
        raise RuntimeError(f"{label} worker failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def alternate(rounds: int, measure) -> tuple:
    """``measure(framework)`` for ours and torch in each round, in alternating order (ours first
    on even rounds); returns the per-round medians as ({framework: [wall]}, {framework: [cpu]})."""
    times, cpu = {"ours": [], "torch": []}, {"ours": [], "torch": []}
    for r in range(rounds):
        for framework in (("ours", "torch") if r % 2 == 0 else ("torch", "ours")):
            result = measure(framework)
            times[framework].append(result["median"])
            cpu[framework].append(result["cpu_median"])
    return times, cpu


def measure(framework: str, layer: str, args) -> dict:
    return run_worker("bench.conv_ratio", [framework, "--layers", layer, "--calls", str(args.calls),
                                           "--warmup", str(args.warmup)], args.threads, f"{framework} {layer}")


def add_timing_arguments(p, rounds: int, calls: int, warmup: int) -> None:
    """--rounds, --calls, --warmup (with these defaults), --threads and the hidden --worker."""
    p.add_argument("--rounds", type=int, default=rounds, help=f"rounds of one process per framework (default {rounds})")
    p.add_argument("--calls", type=int, default=calls, help=f"timed calls per process (default {calls})")
    p.add_argument("--warmup", type=int, default=warmup, help=f"untimed calls per process first (default {warmup})")
    p.add_argument("--threads", type=int, default=1, help="threads of every pool (default 1)")
    p.add_argument("--worker", choices=("ours", "torch"), help=argparse.SUPPRESS)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.conv_ratio", description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", nargs="+", choices=sorted(LAYERS), default=["lenet", "cifar"])
    add_timing_arguments(p, rounds=8, calls=15, warmup=3)
    args = p.parse_args(argv)
    if min(args.rounds, args.calls, args.threads) < 1 or args.warmup < 0:
        p.error(f"--rounds, --calls and --threads must be >= 1 and --warmup >= 0, got --rounds {args.rounds}, "
                f"--calls {args.calls}, --threads {args.threads}, --warmup {args.warmup}")
    if args.worker:
        print(json.dumps(worker(args.worker, args.layers[0], args.calls, args.warmup, args.threads)))
        return 0
    print(f"before: {uptime()}")
    print(f"threads: {args.threads} (OMP/OPENBLAS/MKL_NUM_THREADS, torch.set_num_threads, tinygrad_tx pool); "
          f"{args.rounds} rounds x {args.calls} timed calls per process, float32, forward + backward")
    for layer in args.layers:
        c = LAYERS[layer]
        times, cpu = alternate(args.rounds, lambda framework: measure(framework, layer, args))
        ours, theirs = statistics.median(times["ours"]), statistics.median(times["torch"])
        cpu_ratio = statistics.median(cpu["ours"]) / statistics.median(cpu["torch"])
        per_round = statistics.median(o / t for o, t in zip(times["ours"], times["torch"]))
        print(f"{layer}: batch {c['batch']}, {c['c_in']} -> {c['c_out']} channels, {c['image']}x{c['image']}, "
              f"{c['k']}x{c['k']}, padding {c['pad']}: tinygrad_tx {1e3 * ours:.2f} ms "
              f"[{1e3 * min(times['ours']):.2f}-{1e3 * max(times['ours']):.2f}], torch {1e3 * theirs:.2f} ms "
              f"[{1e3 * min(times['torch']):.2f}-{1e3 * max(times['torch']):.2f}]; ratio of medians "
              f"{ours / theirs:.2f} (median of per-round ratios {per_round:.2f}; of CPU-time medians {cpu_ratio:.2f})")
    print(f"after: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
