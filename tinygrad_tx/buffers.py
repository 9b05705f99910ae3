"""Reused arrays for the engine's large results: no page-fault tax, and nothing process-wide.

Why: a training step makes the same activation-sized arrays at every step and frees them all
when its graph is freed. glibc then returns the top of its heap to the OS (it trims once twice
its mmap threshold is free there), so the next step's forward writes to fresh pages the kernel
must fault in and zero, one fault per 4 KiB: ~2,270 faults and 2.7-3.8 ms of system time per
tutorial GPT step (about 15 % of it), almost all of them in the forward (8.7 MB of activations).
:mod:`tinygrad_tx.allocator` fixes that for the whole process by changing malloc's policy,
which ``import tinygrad_tx`` must not do. This pool fixes it for the engine's own arrays only.

How: :func:`empty` hands out arrays of at least ``MIN_BYTES`` from a list per (shape, dtype)
and keeps a reference to each. An array is free again when that reference is the only one
left: no Tensor, view (a view references its base), ``memoryview``, torch tensor made by
``from_numpy``, saved-for-backward slot or user variable holds it (``sys.getrefcount``). So a
pooled array is never handed out while anything can still read or write it, and nothing is
released by hand. The pool keeps at most ``MAX_ARRAYS`` arrays per shape and ``MAX_BYTES`` in
all; beyond that :func:`empty` is plain ``np.empty``. :func:`empty_cache` drops the free ones
(``torch.cuda.empty_cache``'s counterpart), :func:`stats` reports what is held. :func:`matmul` and
:func:`copy` write a product and a C-contiguous copy (tile by tile from a transposed source) into it.

Only the forward's hot outputs use it (Linear, GELU, LayerNorm, attention scores, clone, and
large same-dtype binary ops): the backward's arrays fault little (96 faults per step), since
they reuse the heap the forward's freed temporaries left.

The cost is memory. The pool keeps, per shape, as many arrays as were ever alive at once,
and a free array of one shape cannot serve another (malloc can split and join freed blocks).
Measured peak RSS of a training step (peak − after imports, 3 steps, with the command's malloc
policy): large GPT 259 → 286 MB (+10 %), tutorial GPT 16.5 → 18.4 MB. Pooling the backward's
arrays as well made it worse (300-339 MB: the backward allocates a node's input gradient
before that node's saved arrays are freed), so the backward keeps using malloc.
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

from .core import seam as _seam

__all__ = ["empty", "matmul", "blas_operand", "copy", "empty_cache", "stats", "MIN_BYTES", "MAX_BYTES", "MAX_ARRAYS"]

MIN_BYTES = 64 * 1024          # smaller arrays come from malloc's free lists, which are not trimmed
MAX_BYTES = 256 * (1 << 20)    # the most the pool holds, live and free together
MAX_ARRAYS = 64                # per (shape, dtype): the scan for a free one stays a few µs

_lists: dict = {}              # (shape, dtype) -> [arrays]
_cursor: dict = {}             # (shape, dtype) -> where the last free array was found
_held = 0                      # bytes of all pooled arrays
_lock = threading.Lock()
_getrefcount = sys.getrefcount
_FREE = 3                      # the pool's list, the loop's name and getrefcount's argument


def empty(shape, dtype) -> np.ndarray:
    """A C-contiguous array like ``np.empty(shape, dtype)``, reused from the pool when one of this
    shape and dtype is no longer referenced anywhere else."""
    global _held
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    n = dtype.itemsize
    for s in shape:
        n *= s
    if n < MIN_BYTES:
        return np.empty(shape, dtype)
    key = (shape, dtype)
    with _lock:
        arrays = _lists.get(key, ())
        count = len(arrays)
        start = _cursor.get(key, 0)
        for i in range(count):
            j = start + i
            if j >= count:
                j -= count
            a = arrays[j]
            if _getrefcount(a) == _FREE:
                _cursor[key] = j + 1 if j + 1 < count else 0
                return a
        a = np.empty(shape, dtype)
        if count < MAX_ARRAYS and _held + n <= MAX_BYTES:
            _lists.setdefault(key, []).append(a)
            _held += n
        return a


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)`` of matrices (or stacks of them, broadcast) written into :func:`empty`."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return np.matmul(a, b, out=empty(shape, np.result_type(a, b)))


BLAS_COPY_ROWS = 64            # blas_operand copies only for products of at least this many rows


def blas_operand(b: np.ndarray, rows: int) -> np.ndarray:
    """``b``, the right operand of a stacked ``np.matmul`` whose left operand has ``rows`` rows,
    as a C-contiguous copy when it is a stack (ndim > 2) that is not C-contiguous (``kᵀ`` from a
    transpose, a head sliced from a fused qkv array) and ``rows`` ≥ ``BLAS_COPY_ROWS``; else
    ``b`` itself. Why: NumPy hands a stack's matrices to BLAS only when the right operand's rows
    are contiguous, and otherwise runs its own loop; from 64 rows on the copy pays for itself:
    q @ kᵀ of (16, 8, 128, 32) views of a qkv array, float32, one thread, copy included,
    1,732 -> 1,112 µs (2026-12-07). With few rows it does not ((32, 4, 16, 16): 27 µs as it is,
    30 copied), nor for a broadcast (a zero stride: the copy would materialise it) or a 2-D b
    (BLAS takes a transposed matrix as it is: ``x @ Wᵀ``)."""
    if b.ndim > 2 and rows >= BLAS_COPY_ROWS and not b.flags.c_contiguous and 0 not in b.strides:
        return np.ascontiguousarray(b)
    return b


def copy(x, dtype=None, pooled: bool = True) -> np.ndarray:
    """A C-contiguous copy of ``x`` (cast to ``dtype`` if given, as ``np.array(x, dtype)`` casts):
    written into :func:`empty` when ``pooled``, else into a fresh array that is never handed out
    again (a leaf's ``.grad``). Plainly ``np.array(x, dtype, order="C", copy=True)``; a transposed
    source is copied tile by tile (:func:`_tile_axis`, :func:`_copy_tiled`)."""
    x = np.asarray(x)
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    out = empty(x.shape, dtype) if pooled else np.empty(x.shape, dtype)
    k = _tile_axis(x)
    if k is None:
        np.copyto(out, x, casting="unsafe")
    else:
        _copy_tiled(out, x, k)
    return out


# NumPy copies in the result's order, so from a transposed source (x.T, a permute that moves the
# last axis) each element it reads is on another cache line. Copying 64 x 64 tiles keeps the lines
# of a tile in cache while it is read: (1024, 1024) float32 x.T 6.9 -> 1.15 ms (torch 0.91), one
# thread, medians, 2026-12-03. Small arrays fit in the cache whole and are copied plainly.
_TILE = 64
_TILED_MIN = 1 << 16           # elements


def _tile_axis(x: np.ndarray) -> int | None:
    """For a large array whose fastest-varying memory axis is not its last one (a transposed
    layout), that axis; else None (NumPy's own copy is fine)."""
    if x.ndim < 2 or x.size < _TILED_MIN or x.strides[-1] == x.itemsize:
        return None
    strides = x.strides
    if min(strides) <= 0:      # broadcast (stride 0) or flipped: NumPy's own copy
        return None
    k = min(range(x.ndim), key=strides.__getitem__)
    return None if k == x.ndim - 1 else k


def _copy_tiled(out: np.ndarray, x: np.ndarray, k: int) -> None:
    """``out[...] = x`` in tiles of ``_TILE`` along axis ``k`` (x's fastest memory axis) and the last axis."""
    index = [slice(None)] * x.ndim
    for i in range(0, x.shape[k], _TILE):
        index[k] = slice(i, i + _TILE)
        for j in range(0, x.shape[-1], _TILE):
            index[-1] = slice(j, j + _TILE)
            tile = tuple(index)
            np.copyto(out[tile], x[tile], casting="unsafe")


def empty_cache() -> int:
    """Drop the pooled arrays nothing else references (their memory goes back to malloc).
    Returns the bytes dropped."""
    global _held
    dropped = 0
    with _lock:
        for key, arrays in list(_lists.items()):
            keep = [a for a in arrays if _getrefcount(a) > _FREE]
            dropped += sum(a.nbytes for a in arrays) - sum(a.nbytes for a in keep)
            if keep:
                _lists[key] = keep
                _cursor[key] = 0
            else:
                del _lists[key]
                _cursor.pop(key, None)
        _held -= dropped
    return dropped


def stats() -> dict:
    """``{"held_bytes", "free_bytes", "arrays", "shapes"}``: what the pool holds now."""
    with _lock:
        free = sum(a.nbytes for lst in _lists.values() for a in lst if _getrefcount(a) == _FREE)
        count = sum(len(lst) for lst in _lists.values())
        return {"held_bytes": _held, "free_bytes": free, "arrays": count, "shapes": len(_lists)}


def _fresh_lock_in_child() -> None:
    """A forked child may inherit the lock held by another thread of the parent: a new one."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


def copy_fresh(x, dtype) -> np.ndarray:
    """The engine's leaf-gradient copy (``core.seam.copy_array``): :func:`copy` into a fresh array."""
    return copy(x, dtype, pooled=False)


_seam.copy_array = copy_fresh   # the engine's leaf-gradient copy, tiled for a transposed source
