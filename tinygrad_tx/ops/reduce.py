"""Reductions: sum, mean, var, max/min (full and along a dim).

A reduction maps x of shape S to y of shape S with the reduced axes removed
(or kept as size 1 when ``keepdim``). Every backward first re-inserts the
reduced axes into g as size 1 (``_expand_reduced``) so that g broadcasts back
against x; then the derivative is elementwise.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd import Function, accumulation_dtype


def normalize_dims(dim, ndim: int, op: str):
    """``dim`` (None, int or sequence of ints, possibly negative) as a sorted tuple of axes."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}: dim must be an int or a tuple of ints, got {dim!r}")
        if not lo <= d <= hi:
            raise ValueError(f"{op}: dimension out of range (expected to be in range of "
                             f"[{lo}, {hi}], but got {d})")
        out.append(int(d) % ndim if ndim > 0 else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {dim!r} names the same dimension twice")
    return tuple(sorted(out)) if ndim > 0 else ()


def _expand_reduced(g, axes, keepdim):
    """Re-insert the reduced axes of g as size-1 axes (a no-op if keepdim)."""
    if keepdim or not axes:
        return g
    return np.expand_dims(g, axes)


class Sum(Function):
    """y = Σ_{reduced axes} x.   Each x element adds once into one y element, so
    dL/dx = g broadcast back over the reduced axes."""

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        axes = normalize_dims(dim, x.ndim, "sum")
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        acc = accumulation_dtype(x.dtype)
        y = np.sum(x, axis=axes, keepdims=keepdim, dtype=acc)
        return y if acc is None else y.astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return np.broadcast_to(_expand_reduced(g, ctx.axes, ctx.keepdim), ctx.shape)


class Mean(Function):
    """y = (1/N) Σ x over the reduced axes (N = number of reduced elements).
    dL/dx = g / N broadcast back over the reduced axes."""

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        axes = normalize_dims(dim, x.ndim, "mean")
        if x.dtype.kind not in "fc":
            raise TypeError(f"mean: input dtype should be floating point, got {x.dtype}")
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        ctx.n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        return np.mean(x, axis=axes, keepdims=keepdim, dtype=accumulation_dtype(x.dtype)).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        g = _expand_reduced(g, ctx.axes, ctx.keepdim) / ctx.n
        return np.broadcast_to(g, ctx.shape)


class Var(Function):
    """y = Σ (x - μ)² / (N - correction),  μ the mean over the reduced axes.

    dy/dx_i = [2(x_i - μ) - (2/N) Σ_j (x_j - μ)] / (N - c); the sum of deviations
    is zero, so dL/dx = g · 2(x - μ)/(N - correction).
    correction=1 is Bessel's (unbiased) estimate, torch's default."""

    @staticmethod
    def forward(ctx, x, dim=None, correction=1, keepdim=False):
        axes = normalize_dims(dim, x.ndim, "var")
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        acc = accumulation_dtype(x.dtype)
        dev = x - np.mean(x, axis=axes, keepdims=True, dtype=acc).astype(x.dtype)
        denom = max(n - correction, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = (np.sum(dev * dev, axis=axes, keepdims=keepdim, dtype=acc) / denom).astype(x.dtype)
        ctx.save_for_backward(dev)
        ctx.axes, ctx.keepdim, ctx.denom = axes, keepdim, denom
        return y

    @staticmethod
    def backward(ctx, g):
        (dev,) = ctx.saved_tensors
        g = _expand_reduced(g, ctx.axes, ctx.keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            return g * dev * (np.asarray(2.0, dtype=dev.dtype) / ctx.denom)


class MaxAll(Function):
    """y = max over all elements (``mode='max'``) or min (``mode='min'``).

    The max is a function of the arg-max elements alone. At a tie of k maximal
    elements torch distributes the gradient evenly (g/k each), so do we:
    dL/dx = g · [x == y] / count(x == y)."""

    @staticmethod
    def forward(ctx, x, mode="max"):
        if x.size == 0:
            raise ValueError(f"{mode}(): expected a non-empty tensor, got shape {x.shape}")
        y = np.max(x) if mode == "max" else np.min(x)
        ctx.save_for_backward(x, np.asarray(y))
        return np.asarray(y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        hit = x == y
        return hit * (g / np.count_nonzero(hit)).astype(x.dtype)


class MaxDim(Function):
    """values = x gathered at ``idx`` along ``axis``: the max (or min) of each slice,
    with ``idx`` the arg-max computed by the caller (the first occurrence, as
    torch's CPU kernel picks it), shape of x with ``axis`` kept as size 1.

    Only the selected element of each slice influences the output, so
    dL/dx = g scattered to the position of the arg-max, zero elsewhere."""

    @staticmethod
    def forward(ctx, x, idx, axis, keepdim=False):
        values = np.take_along_axis(x, idx, axis=axis)
        ctx.shape, ctx.axis, ctx.keepdim = x.shape, axis, keepdim
        ctx.save_for_backward(idx)
        return values if keepdim else np.squeeze(values, axis)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        if not ctx.keepdim:
            g = np.expand_dims(g, ctx.axis)
        out = np.zeros(ctx.shape, dtype=g.dtype)
        np.put_along_axis(out, idx, g, axis=ctx.axis)
        return out, None


def arg_extreme(x, dim, keepdim, mode):
    """(axis, indices with the axis kept) of the max/min of x along dim, validated."""
    dims = normalize_dims(dim, x.ndim, mode)
    if x.ndim == 0:  # normalize_dims validated dim (0 or -1) and returned no axis
        return None, None
    (axis,) = dims
    if x.shape[axis] == 0:
        raise ValueError(f"{mode}(): cannot reduce over the zero-size dimension {dim} of shape {x.shape}")
    fn = np.argmax if mode == "max" else np.argmin
    return axis, fn(x, axis=axis, keepdims=True)


MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])

TENSOR_METHODS = {}
FUNCTIONS = {}
