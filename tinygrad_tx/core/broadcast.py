"""The one place where broadcasting is undone: :func:`reduce_grad_to_input`."""
from __future__ import annotations

import math

import numpy as np

from . import seam as _seam


def accumulation_dtype(dtype):
    """The dtype a sum of ``dtype`` values accumulates in: float64 for float32 (and float16),
    rounded once at the end; None (NumPy's default) otherwise. NumPy's float32 running sum over
    a non-contiguous axis loses about N ulps in N terms, where torch's cascade sum stays near one."""
    dtype = np.dtype(dtype)
    return np.float64 if dtype.kind == "f" and dtype.itemsize < 8 else None


# Below this many rows a float64 accumulation is cheaper than the pairwise passes (each a NumPy call).
_PAIRWISE_MIN_ROWS = 64


def sum_rows(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=0)`` of a 2-D (N, M) array, accurate without widening to float64.

    For float32 with many rows: a pairwise (tree) sum -- add the bottom half of the rows onto
    the top half, repeat -- so each total is a balanced tree of log2(N) additions, whose
    rounding error grows like log2(N) ulps (a running sum's grows like N), the accuracy of
    torch's cascade sum. Each pass is one vectorised NumPy add over half the remaining rows,
    so the work is the N·M additions of any sum, at float32 memory traffic; the last few rows
    are summed in float64. About 2x faster than accumulating the whole sum in float64, whose
    cast doubles the bytes touched. Other dtypes (float64, ints) use NumPy's sum.
    """
    acc = accumulation_dtype(a.dtype)
    if acc is None:
        return a.sum(axis=0)
    n = a.shape[0]
    if n >= _PAIRWISE_MIN_ROWS:
        half = n // 2
        top = a[:half] + a[half:2 * half]          # a fresh array: later passes add in place
        if n % 2:
            top[0] += a[-1]
        n = half
        while n >= _PAIRWISE_MIN_ROWS:
            half = n // 2
            if n % 2:
                top[0] += top[n - 1]
            top[:half] += top[half:2 * half]
            n = half
        a = top[:n]
    return a.sum(axis=0, dtype=acc).astype(a.dtype)


def reduce_grad_to_input(grad, shape, dtype, fn_name: str):
    """Return ``grad`` reduced to an input of ``shape`` and cast to its ``dtype``.

    Derivation: if forward broadcast ``x`` of shape ``s`` to shape ``S`` then
    ``y[i] = x[proj(i)]`` and ``dL/dx[j] = sum_{i: proj(i)=j} dL/dy[i]``: a sum
    over the leading axes that broadcasting prepended, and over every axis where
    ``x`` had size 1 but ``S`` does not. A sum over leading axes only (a bias, a
    positional embedding added to a batch) of a contiguous gradient is a sum of the
    rows of a 2-D view, done by the pairwise :func:`sum_rows`; other sums accumulate
    float32 in float64.
    """
    if not isinstance(grad, np.ndarray):
        grad = np.asarray(grad)
    if grad.shape != shape:
        nlead = leading_axes(grad.shape, shape, fn_name)
        if nlead and grad.shape[nlead:] == shape and grad.size and grad.flags.c_contiguous:
            grad = sum_rows(grad.reshape(math.prod(grad.shape[:nlead]), -1)).reshape(shape)
        else:
            axes = broadcast_axes(grad.shape, shape, nlead)
            if axes:
                grad = grad.sum(axis=axes, keepdims=True, dtype=accumulation_dtype(grad.dtype))
            if nlead:
                grad = grad.reshape(grad.shape[nlead:])
        check_reduced(grad.shape, shape, fn_name)
    if grad.dtype != dtype:
        grad = grad.astype(dtype)
    if _seam.recorder is not None:   # tinygrad_tx.compile notes which gradients were reduced
        _seam.recorder.reduced(grad)
    return grad


def leading_axes(grad_shape, shape, fn_name: str) -> int:
    """How many leading axes broadcasting prepended to an input of ``shape`` (an error when the
    gradient has fewer axes than the input)."""
    nlead = len(grad_shape) - len(shape)
    if nlead < 0:
        raise RuntimeError(f"{fn_name}.backward returned a gradient of shape {tuple(grad_shape)} "
                           f"for an input of shape {shape}")
    return nlead


def broadcast_axes(grad_shape, shape, nlead: int) -> tuple:
    """The axes to sum a gradient of ``grad_shape`` over: the ``nlead`` prepended ones, and every
    axis where the input had size 1 but the gradient does not."""
    return tuple(range(nlead)) + tuple(nlead + i for i, s in enumerate(shape)
                                       if s == 1 and grad_shape[nlead + i] != 1)


def check_reduced(reduced_shape, shape, fn_name: str) -> None:
    if tuple(reduced_shape) != tuple(shape):
        raise RuntimeError(f"{fn_name}.backward returned a gradient of shape {tuple(reduced_shape)} "
                           f"that cannot be reduced to its input's shape {shape}")
