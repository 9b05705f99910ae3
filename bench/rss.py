"""Peak resident memory of a training step: ``python -m bench.rss ours|torch COMPONENT [--steps K]``.

Run as a fresh process per framework (so nothing else lives in it). It reports
``ru_maxrss`` (the process's high-water mark) at three points: after the
imports (and one tiny forward+backward+AdamW step that loads what the
framework initialises lazily), after building the model and data, and after K training
steps — and the step's own share, peak − after-imports. The ``ours`` process never imports
torch. Prints one JSON object on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

def maxrss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r if sys.platform == "darwin" else r * 1024)   # Linux reports KiB, macOS bytes


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.rss")
    ap.add_argument("framework", choices=("ours", "torch"))
    ap.add_argument("component", nargs="?", default="gpt_large")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cfg", default="", help="JSON config overriding the component's default")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    if args.framework == "torch":
        import torch
        threads = int(os.environ.get("BENCH_THREADS", "0") or 0)
        if threads:
            torch.set_num_threads(threads)
    else:   # as the timing workers and the tinygrad-tx command do: freed arrays kept for reuse
        from tinygrad_tx import allocator
        allocator.apply_default_policy()
    from .backends import make_backend
    from .components import REGISTRY, build_case
    B = make_backend(args.framework, "float32")
    B.model("gpt", "GPTLanguageModel")  # import the model code before the baseline
    # one tiny forward+backward+AdamW step loads what each framework initialises lazily on first
    # use (torch: ~70 MB when the first optimizer is built), which belongs to the framework,
    # not to the step
    x = B.leaf(np.ones((8, 8)))
    B.backward((x @ x).sum())
    B.AdamW([x], lr=1e-3).step()
    after_imports = maxrss_bytes()

    cfg = json.loads(args.cfg) if args.cfg else REGISTRY[args.component].full
    case = build_case(B, args.component, cfg, args.seed)
    after_build = maxrss_bytes()
    tensors = [t for _, t in case.leaves]
    t0 = time.perf_counter()
    for _ in range(args.steps):
        B.set_grad_none(tensors)
        loss = case.forward()
        B.backward(loss)
        if case.optimizer is not None:
            case.optimizer.step()
        del loss
    elapsed = time.perf_counter() - t0
    peak = maxrss_bytes()
    json.dump({"framework": args.framework, "component": args.component, "steps": args.steps,
               "after_imports": after_imports, "after_build": after_build, "peak": peak,
               "step_delta": peak - after_imports, "seconds_per_step": elapsed / max(args.steps, 1),
               "torch_imported": "torch" in sys.modules}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
