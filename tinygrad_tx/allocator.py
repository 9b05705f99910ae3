"""Keep freed array memory in the process for reuse, instead of returning it to the OS.

A training step allocates and frees the same activation-sized arrays at every step. With
glibc's defaults a block above the mmap threshold (128 KiB at first, raised at run time up
to the largest block freed so far) gets a fresh ``mmap`` and is unmapped when freed, and the
heap is trimmed whenever twice that threshold is free at its top. Each step then writes to
pages the kernel has to fault in and zero again, one fault per 4 KiB. Measured (one thread):
~2,500 page faults per ``gpt_tutorial`` step, 7 ms of system time, about a fifth of the step;
17,000-20,000 per ``gpt_large`` step, ~110 ms, about a tenth. Serving blocks up to 32 MiB from
the heap and keeping up to 256 MiB of free heap removes them (0 faults per step once warm);
the peak RSS of the ``gpt_large`` step is unchanged, because freed memory is reused rather
than added to. PyTorch's CPU tuning guide makes the same point by recommending jemalloc or
tcmalloc.

``import tinygrad_tx`` changes nothing: the policy is process-wide (glibc's ``mallopt``), so
it is the program's choice. The ``tinygrad-tx`` command (``cli.main``) and the benchmark's
worker processes call :func:`apply_default_policy` (:func:`keep_freed_memory` unless the
environment variable ``TINYGRAD_TX_MALLOC`` is ``default``). A script of your own opts in
with one call, before its training loop::

    import tinygrad_tx
    tinygrad_tx.allocator.keep_freed_memory()

Elsewhere than glibc (macOS, musl) both do nothing and return False.

Without the opt-in, the engine's own pool (:mod:`tinygrad_tx.buffers`) already reuses the
forward's large results, where nearly all of a step's faults were (tutorial GPT step: 2,273 → 1
faults); the opt-in still covers every other array (the backward's, a user's own NumPy).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

MIB = 1 << 20
_M_TRIM_THRESHOLD = -1   # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


def _libc():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version") else None
    except OSError:
        return None


def keep_freed_memory(mmap_threshold: int = 32 * MIB, trim_threshold: int = 256 * MIB) -> bool:
    """Serve blocks up to ``mmap_threshold`` bytes from the heap and keep up to
    ``trim_threshold`` bytes of free heap (glibc ``mallopt``). True when both were set."""
    libc = _libc()
    if libc is None:
        return False
    ok = libc.mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold))
    return bool(ok) and bool(libc.mallopt(_M_TRIM_THRESHOLD, int(trim_threshold)))


def apply_default_policy() -> bool:
    """What the ``tinygrad-tx`` command and the benchmark workers run at start: :func:`keep_freed_memory`
    unless ``TINYGRAD_TX_MALLOC=default``. True when the policy was set."""
    if os.environ.get("TINYGRAD_TX_MALLOC", "").strip().lower() == "default":
        return False
    return keep_freed_memory()
