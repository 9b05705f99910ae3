"""The parent's side of the worker protocol: spawn a worker, send a request, read its reply."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


class WorkerError(RuntimeError):
    pass


class FileError(WorkerError):
    """``bench --file``: the user's file is wrong (one line: the worker's BenchFileError)."""


class WorkerTimeout(WorkerError):
    """A request did not get its reply in time (the worker was killed)."""


def child_env(threads: int | None, extra: dict | None = None) -> dict:
    """Environment for every child process: the repo on PYTHONPATH and, with ``threads``, the
    same thread count for every BLAS/OpenMP pool (set before the child imports anything);
    ``extra``: more variables (``TINYGRAD_TX_KERNELS=0`` for the NumPy-path worker)."""
    env = dict(os.environ, **(extra or {}))
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if threads:
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BENCH_THREADS"):
            env[k] = str(threads)
    return env


class WorkerClient:
    """A long-lived ``python -m bench.worker`` child speaking JSON lines."""

    def __init__(self, framework: str, device: str = "cpu", threads: int | None = None, label: str | None = None,
                 file: str | None = None, env: dict | None = None):
        self.framework, self.device = framework, device
        self.label = label or (framework if device == "cpu" else f"{framework}_{device}")
        extra = [] if file is None else ["--file", str(file)]   # bench --file: the user's entries
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.worker", framework, "--device", device, *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(REPO_ROOT),
                                     env=child_env(threads, env), text=True, bufsize=1)
        ready = self._read()
        if not ready.get("ok"):
            self.close()
            if ready.get("file_error"):
                raise FileError(ready.get("error"))
            raise WorkerError(f"{self.label} worker failed to start: {ready.get('error')}\n{ready.get('traceback', '')}")

    def _read(self, timeout: float | None = None, what: str = "") -> dict:
        if timeout is not None and not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.proc.kill()
            self.proc.wait()
            raise WorkerTimeout(f"{self.label}: {what or 'the request'} did not return within {timeout:g} s "
                                f"(the worker was stopped)")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.poll()
            raise WorkerError(f"{self.label} worker exited (code {code}) without replying")
        return json.loads(line)

    def call(self, cmd: str, timeout: float | None = None, **kw) -> dict:
        """Send one request; return the reply, raising WorkerError if the worker reports failure
        (WorkerTimeout when ``timeout`` seconds pass without a reply)."""
        reply = self.request(cmd, timeout=timeout, **kw)
        if not reply.get("ok"):
            raise WorkerError(f"{self.label}: {cmd} failed: {reply.get('error')}\n{reply.get('traceback', '')}")
        return reply

    def request(self, cmd: str, timeout: float | None = None, **kw) -> dict:
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self.proc.stdin.flush()
        what = f"{cmd} of {kw['component']!r}" if "component" in kw else f"{cmd} of {kw['key']!r}" if "key" in kw \
            else cmd
        return self._read(timeout, what)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
