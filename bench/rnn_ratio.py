"""nn.RNN / nn.LSTM forward+backward over a sequence: tinygrad_tx's time over torch's as T grows.

Usage (from the repository root)::

    python -m bench.rnn_ratio                                  # 6 rounds, 1 thread, RNN and LSTM, T = 16 64 256
    python -m bench.rnn_ratio --rounds 8 --calls 7 --modules lstm --steps 16 256

The case (float32, batch_first=False): input (T, batch 32, 32 features), hidden 64, one layer, the
gradients of the input and of every parameter, from a seeded random cotangent of the output. The
recurrent layers read the input one step at a time (``unbind(0)``: T indexing nodes), so this is
the benchmark of issue #18: a backward that costs O(T) per step would show as a ratio growing with
T; the per-step work alone keeps it flat.

Method as ``bench.conv_ratio`` (whose process handling and timing it reuses): each round runs one fresh
process per framework, alternating which goes first, every thread pool limited to ``--threads``;
a process makes ``--warmup`` untimed calls, then times ``--calls`` calls of
``out, _ = rnn(x); out.backward(g)`` (gradients reset to None between calls) and reports their
median, wall clock and process CPU time. Reported per (module, T): the median over rounds of each
framework's medians, their ratio ours / torch, and the ratio of the CPU-time medians; ``uptime``
before and after.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from .conv_ratio import add_timing_arguments, alternate, run_worker, time_calls, uptime

BATCH, INPUT, HIDDEN = 32, 32, 64


def arrays(steps: int):
    """The float32 input, the cotangent of the output and the seed of the weights: identical in both processes."""
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps, BATCH, INPUT)).astype(np.float32)
    g = rng.standard_normal((steps, BATCH, HIDDEN)).astype(np.float32)
    return x, g


def worker(framework: str, module: str, steps: int, calls: int, warmup: int, threads: int) -> dict:
    """Time ``calls`` forward+backward calls in this process; returns the medians (seconds)."""
    import numpy as np
    x, g = arrays(steps)
    if framework == "torch":
        import torch as lib
        lib.set_num_threads(threads)
    else:
        import tinygrad_tx as lib
        from tinygrad_tx import parallel
        parallel.set_num_threads(threads)
    rnn = (lib.nn.LSTM if module == "lstm" else lib.nn.RNN)(INPUT, HIDDEN)
    rng = np.random.default_rng(1)   # the same weights in both frameworks
    with lib.no_grad():
        for _, p in sorted(rnn.named_parameters()):
            p.copy_(lib.tensor(rng.uniform(-0.125, 0.125, tuple(p.shape)).astype(np.float32)))
    xt = lib.tensor(x, requires_grad=True)
    cot = lib.tensor(g)
    leaves = [xt, *rnn.parameters()]

    def call():
        for t in leaves:
            t.grad = None
        rnn(xt)[0].backward(cot)

    return time_calls(call, calls, warmup)


def measure(framework: str, module: str, steps: int, args) -> dict:
    return run_worker("bench.rnn_ratio", [framework, "--modules", module, "--steps", str(steps), "--calls",
                                          str(args.calls), "--warmup", str(args.warmup)], args.threads,
                      f"{framework} {module} T={steps}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.rnn_ratio", description=__doc__.split("\n\n")[0])
    p.add_argument("--modules", nargs="+", choices=("rnn", "lstm"), default=["rnn", "lstm"])
    p.add_argument("--steps", nargs="+", type=int, default=[16, 64, 256], help="sequence lengths T")
    add_timing_arguments(p, rounds=6, calls=5, warmup=1)
    args = p.parse_args(argv)
    if min(args.rounds, args.calls, args.threads, *args.steps) < 1 or args.warmup < 0:
        p.error(f"--rounds, --calls, --threads and --steps must be >= 1 and --warmup >= 0, got --rounds "
                f"{args.rounds}, --calls {args.calls}, --threads {args.threads}, --steps {args.steps}, "
                f"--warmup {args.warmup}")
    if args.worker:
        print(json.dumps(worker(args.worker, args.modules[0], args.steps[0], args.calls, args.warmup,
                                args.threads)))
        return 0
    print(f"before: {uptime()}")
    print(f"threads: {args.threads}; {args.rounds} rounds x {args.calls} timed calls per process; float32, "
          f"batch {BATCH}, input {INPUT}, hidden {HIDDEN}, forward + backward")
    for module in args.modules:
        for steps in args.steps:
            times, cpu = alternate(args.rounds, lambda framework: measure(framework, module, steps, args))
            ours, theirs = statistics.median(times["ours"]), statistics.median(times["torch"])
            cpu_ratio = statistics.median(cpu["ours"]) / statistics.median(cpu["torch"])
            print(f"{module} T={steps}: tinygrad_tx {1e3 * ours:.1f} ms [{1e3 * min(times['ours']):.1f}-"
                  f"{1e3 * max(times['ours']):.1f}], torch {1e3 * theirs:.1f} ms [{1e3 * min(times['torch']):.1f}-"
                  f"{1e3 * max(times['torch']):.1f}]; ratio {ours / theirs:.2f} (of CPU-time medians "
                  f"{cpu_ratio:.2f})", flush=True)
    print(f"after: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
