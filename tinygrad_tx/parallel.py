"""Threads for large elementwise work (``torch.set_num_threads`` / ``get_num_threads``).

NumPy releases the GIL inside a ufunc's inner loop, so one big elementwise op
split into contiguous chunks can run its chunks on several cores at once. Our
matmuls already use BLAS's own threads; this pool is for the ops written as a
sequence of NumPy passes over cache-sized blocks (exact float32 GELU), which
would otherwise use one core while torch's kernels use all of them.

The thread count defaults to ``OMP_NUM_THREADS`` when set (the variable torch
and the benchmark use), else the CPUs this process may run on. Work smaller
than ``MIN_PARALLEL`` elements stays in the calling thread: below it, handing
chunks to threads costs more than it saves.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

MIN_PARALLEL = 1 << 16   # elements; torch's own grain size for elementwise kernels is 32768

_lock = threading.Lock()
_threads: int | None = None
_pool: ThreadPoolExecutor | None = None


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def omp_num_threads() -> int | None:
    """``OMP_NUM_THREADS`` when it is set to a positive integer, else None."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(env) if env.isdigit() and int(env) >= 1 else None


def _default_threads() -> int:
    return omp_num_threads() or available_cpus()


def get_num_threads() -> int:
    """Threads used for large elementwise work (``torch.get_num_threads``)."""
    global _threads
    if _threads is None:
        _threads = _default_threads()
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for large elementwise work (``torch.set_num_threads``); 1 disables the pool."""
    global _threads, _pool
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: expected a positive int, got {n!r}")
    with _lock:
        if _pool is not None and n != _threads:
            _pool.shutdown(wait=True)
            _pool = None
        _threads = n


def _forget_pool_in_child() -> None:
    """A forked child inherits the pool object but not its threads: start afresh there."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tinygrad_tx")
        return _pool


def parallel_chunks(n: int, fn, align: int = 1) -> None:
    """Call ``fn(start, stop)`` on contiguous chunks covering ``range(n)``, one chunk per thread.

    Chunk boundaries are multiples of ``align`` (a block size, so that no block is split).
    With one thread, or fewer than ``MIN_PARALLEL`` elements, this is ``fn(0, n)`` in the
    calling thread. Otherwise the caller runs the first chunk itself while the pool runs the
    others; an exception in any chunk is raised here after all chunks have finished.
    ``fn`` must only write to its own chunk of the outputs (and its own scratch buffers).
    """
    threads = get_num_threads()
    if threads == 1 or n < MIN_PARALLEL:
        fn(0, n)
        return
    per = -(-n // threads)                    # ceil(n / threads), rounded up to the alignment
    per = -(-per // align) * align
    bounds = [(lo, min(lo + per, n)) for lo in range(0, n, per)]
    if len(bounds) == 1:
        fn(0, n)
        return
    pool = _executor(threads - 1)
    futures = [pool.submit(fn, lo, hi) for lo, hi in bounds[1:]]
    try:
        fn(*bounds[0])
    finally:
        for f in futures:
            f.exception()                     # wait for every chunk, even if ours raised
    for f in futures:
        f.result()                            # re-raise the first failure of a pool chunk
