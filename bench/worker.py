"""A benchmark worker: ``python -m bench.worker ours|torch [--device cpu|cuda]``.

It speaks JSON lines: one request object per line on stdin, one reply per line
on stdout (``{"ok": true, ...}`` or ``{"ok": false, "error": ..., "traceback": ...}``).
Anything else the process prints goes to stderr, so it cannot corrupt the protocol.
The ``ours`` worker never imports torch (``hello`` reports whether it did).

With ``--file BENCH_FILE.py`` it also registers the file's entries as components
(:mod:`bench.userfile`) and lists them in its ``hello`` reply.

Requests (``cmd``):
  hello                       -> framework, device, thread counts, versions
  setup key component cfg seed -> builds a case under ``key``, runs one forward+backward
                                 while counting the bytes saved for backward; returns them
  time key mode n             -> n per-call wall-clock times (seconds) of ``fwd`` or ``fwdbwd``,
                                 and the process's CPU time of each call
  matmul_peak n reps          -> best float32 n×n×n matmul GFLOP/s of this framework
  release [key]               -> drop one case (or all)
  quit
"""
from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback

import numpy as np

from .components import build_case, cotangent


def blas_info():
    """Thread pools NumPy (and torch, if loaded) use, via threadpoolctl when installed."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {"threadpoolctl": None}
    return {"threadpoolctl": [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads", "version")}
                              for p in threadpool_info()]}


class Worker:
    def __init__(self, framework: str, device: str = "cpu", file: str | None = None):
        self.framework = framework
        self.device = device
        threads = int(os.environ.get("BENCH_THREADS", "0") or 0)
        if framework == "torch":
            import torch
            if threads:
                torch.set_num_threads(threads)
        elif threads:                       # our pool for large elementwise work: same count as torch
            import tinygrad_tx
            tinygrad_tx.set_num_threads(threads)
        if framework == "ours":   # as the tinygrad-tx command does: freed arrays kept for reuse (allocator.py)
            from tinygrad_tx import allocator
            allocator.apply_default_policy()
        from .backends import make_backend
        self.B = make_backend(framework, "float32", device)
        self.cases = {}
        self.file_components = None       # ``--file``: the user's entries, registered as components
        if file is not None:
            from .userfile import register
            self.file_components = register(file, framework)

    # ------------------------------------------------------------------ commands
    def hello(self, req):
        info = {"framework": self.framework, "device": self.device, "pid": os.getpid(),
                "numpy": np.__version__, "torch_imported": "torch" in sys.modules,
                "env_threads": {k: os.environ.get(k) for k in
                                ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
        info.update(self.B.info())
        if self.file_components is not None:
            info["file_components"] = self.file_components
        if self.framework == "ours":      # which path the fused ops run: 'c (gcc ...)' or 'numpy: <why>'
            from tinygrad_tx import kernels
            info["kernels"] = kernels.mode()
        info.update(blas_info())
        if self.framework == "torch":
            info["cuda_available"] = bool(self.B.torch.cuda.is_available())
        return info

    def setup(self, req):
        """Build a case under ``key`` (several may live side by side), run one forward+backward
        while counting the bytes saved for backward, and return them with the FLOP counts."""
        key = req.get("key", "default")
        self.cases.pop(key, None)
        gc.collect()
        seed = int(req.get("seed", 0))
        case = build_case(self.B, req["component"], req["cfg"], seed)
        out = case.forward()
        shape = tuple(out.shape)
        distinct = self.B.distinct_saved_bytes(out)
        g = None if len(shape) == 0 else self.B.const(cotangent(shape, seed))
        del out
        tensors = [t for _, t in case.leaves]
        fwd = case.forward

        def fwdbwd(B=self.B, case=case, g=g, tensors=tensors):
            B.set_grad_none(tensors)
            out = case.forward()
            B.backward(out, g)
            if case.optimizer is not None:
                case.optimizer.step()
            return out

        self.cases[key] = {"fwd": fwd, "fwdbwd": fwdbwd}
        saved = {}
        t0 = time.perf_counter()
        with self.B.count_saved(saved):
            fwdbwd()
        self.B.sync()
        reply = {"saved_bytes": saved["bytes"], "saved_bytes_distinct": distinct,
                 "flops_fwd": case.flops, "flops_fwdbwd": case.fwdbwd_flops(),
                 "first_fwdbwd_s": time.perf_counter() - t0, "out_shape": list(shape), "info": case.info}
        if req.get("compiled") and case.forward_on is not None and case.optimizer is not None:
            reply["compiled"] = self._compile_step(key, case, "compiled")
            if self.framework == "ours":
                reply["fused"] = self._compile_step(key, case, "fused", fuse=True)
        return reply

    def _compile_step(self, key, case, mode, **kw) -> dict:
        """The training step (grads cleared, forward, backward, optimizer step) under the framework's
        compiler, as ``mode`` (``compiled``; ours also ``fused``: ``compile(fuse=True)``, ``kw``):
        ``{"compile_s": first call (recording / compiling)}``, or ``{"error": why}`` when the compiler
        cannot run here (or, fused, when it fused nothing: no C compiler, a failed build)."""
        B, opt = self.B, case.optimizer

        def step(*inputs):
            opt.zero_grad(set_to_none=True)
            out = case.forward_on(*inputs)
            out.backward()
            opt.step()
            return out

        try:
            compiled = B.compile(step, **kw)
            t0 = time.perf_counter()
            compiled(*case.step_inputs)
            B.sync()
            compile_s = time.perf_counter() - t0
            compiled(*case.step_inputs)       # the first replay (a retrace shows here, not in the rounds)
        except Exception as e:               # noqa: BLE001 - reported in the table, the row still runs
            return {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
        if kw.get("fuse") and not compiled.kernels:   # it fell back to the unfused program (one warning)
            from tinygrad_tx import kernels
            return {"error": f"compile(fuse=True) fused nothing (kernels: {kernels.mode()})"}
        self.cases[key][mode] = lambda: compiled(*case.step_inputs)
        return {"compile_s": compile_s}

    def time(self, req):
        key = req.get("key", "default")
        if key not in self.cases:
            raise RuntimeError(f"time: no case {key!r} set up (send setup first)")
        fn = self.cases[key][req["mode"]]
        n = int(req.get("n", 1))
        sync, clock, cpu = self.B.sync, time.perf_counter, time.process_time
        times, cpu_times = [], []
        for _ in range(n):
            sync()
            c0, t0 = cpu(), clock()
            out = fn()
            sync()
            times.append(clock() - t0)
            cpu_times.append(cpu() - c0)   # CPU seconds of this process, all its threads
            del out           # freeing the graph is not part of the timed call
        return {"times": times, "cpu_times": cpu_times}

    def matmul_peak(self, req):
        n, reps = int(req.get("n", 1024)), int(req.get("reps", 5))
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        if self.framework == "torch":
            torch = self.B.torch
            a, b = torch.from_numpy(a).to(self.device), torch.from_numpy(b).to(self.device)
            mm = torch.mm
        else:
            mm = np.matmul
        mm(a, b)
        best = float("inf")
        for _ in range(reps):
            self.B.sync()
            t0 = time.perf_counter()
            mm(a, b)
            self.B.sync()
            best = min(best, time.perf_counter() - t0)
        return {"n": n, "seconds": best, "gflops": 2 * n ** 3 / best / 1e9}

    def release(self, req):
        if "key" in req:
            self.cases.pop(req["key"], None)
        else:
            self.cases.clear()
        gc.collect()
        return {}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("ours", "torch"):
        print("usage: python -m bench.worker ours|torch [--device cpu|cuda] [--file BENCH_FILE.py]", file=sys.stderr)
        return 2
    framework = argv[0]
    device = argv[argv.index("--device") + 1] if "--device" in argv else "cpu"
    # the protocol gets a private copy of stdout; fd 1 (print, C libraries) goes to stderr
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        worker = Worker(framework, device, argv[argv.index("--file") + 1] if "--file" in argv else None)
    except Exception as e:  # report the failure to the parent instead of dying silently
        from .userfile import BenchFileError
        if isinstance(e, BenchFileError):   # the user's file: its one line is the whole message
            proto.write(json.dumps({"ok": False, "error": str(e), "file_error": True}) + "\n")
            return 1
        proto.write(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}",
                                "traceback": traceback.format_exc()}) + "\n")
        return 1
    proto.write(json.dumps({"ok": True, "ready": True}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        cmd = req.get("cmd")
        if cmd == "quit":
            proto.write(json.dumps({"ok": True}) + "\n")
            break
        try:
            handler = getattr(worker, cmd) if cmd in ("hello", "setup", "time", "matmul_peak", "release") else None
            if handler is None:
                raise ValueError(f"unknown command {cmd!r}")
            reply = {"ok": True, **handler(req)}
        except Exception as e:
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        proto.write(json.dumps(reply, default=_jsonable) + "\n")
    return 0


def _jsonable(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


if __name__ == "__main__":
    sys.exit(main())
