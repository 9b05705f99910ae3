"""Scans along one dim: cumsum, cumprod, cummax/cummin, logcumsumexp.

A scan maps a slice x_0..x_{n-1} to y_0..y_{n-1} where y_i depends on x_0..x_i only, so
dL/dx_j = Σ_{i ≥ j} g_i ∂y_i/∂x_j: every backward is a *reversed* cumulative sum
(``_revcumsum``) of some per-output term.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core.function import ArrayFunction
from ..core.broadcast import accumulation_dtype
from ..autograd.node_names import named
from ..core.tensor import Tensor
from .movement import put
from .reduce import _zeros_once_differentiable, as_function, canonical_dim, cast_input, pick_dim

CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _revcumsum(a, axis):
    """r_j = Σ_{i ≥ j} a_i along ``axis``."""
    dt = np.result_type(a)
    return np.astype(np.flip(np.cumsum(np.flip(a, axis), axis=axis, dtype=accumulation_dtype(dt)), axis), dt)


class CumSum(ArrayFunction):
    """y_i = Σ_{j ≤ i} x_j.  ∂y_i/∂x_j = 1 for i ≥ j, so dL/dx_j = Σ_{i ≥ j} g_i, the
    reversed cumulative sum of g. Integer and bool inputs give int64 (torch)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axis=0):
        ctx.axis = axis
        if x.dtype.kind in "biu":
            return np.cumsum(x, axis=axis, dtype=np.int64)
        return np.cumsum(x, axis=axis, dtype=accumulation_dtype(x.dtype)).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return _revcumsum(g, ctx.axis)


class CumProd(ArrayFunction):
    """y_i = Π_{l ≤ i} x_l.   ∂y_i/∂x_j = Π_{l ≤ i, l ≠ j} x_l for i ≥ j (else 0).

    No zero in the slice: that is y_i / x_j, so dL/dx_j = (Σ_{i ≥ j} g_i y_i) / x_j.
    With zeros, let k be the first zero's position:

    * j < k: y_i = 0 for every i ≥ k, so only i < k contribute and x_j ≠ 0:
      dL/dx_j = (Σ_{i ≥ j} g_i y_i) / x_j still holds;
    * j = k: ∂y_i/∂x_k = Π_{l ≤ i, l ≠ k} x_l = cz_i, the cumulative product of x with
      x_k replaced by 1 (later zeros still zero it): dL/dx_k = Σ_{i ≥ k} g_i cz_i;
    * j > k: every product of others still holds x_k = 0: dL/dx_j = 0.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axis=0):
        ctx.axis = axis
        if x.dtype.kind in "biu":
            return np.cumprod(x, axis=axis, dtype=np.int64)
        y = np.cumprod(x, axis=axis, dtype=accumulation_dtype(x.dtype)).astype(x.dtype)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        axis = ctx.axis
        zero = x == 0
        if not zero.any():
            return _revcumsum(g * y, axis) / x
        _zeros_once_differentiable("CumProd")
        zeros_so_far = np.cumsum(zero, axis=axis)
        before = zeros_so_far == 0
        first = zero & (zeros_so_far == 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            left = _revcumsum(g * y, axis) / np.where(before, x, 1)
        cz = np.cumprod(np.where(first, 1, x), axis=axis)
        at_first = _revcumsum(g * cz, axis)
        return np.where(before, left, np.where(first, at_first, 0))


class LogCumSumExp(ArrayFunction):
    """y_i = log Σ_{j ≤ i} exp(x_j) (a running ``logaddexp``, no overflow).

    ∂y_i/∂x_j = exp(x_j − y_i) for i ≥ j, so dL/dx_j = Σ_{i ≥ j} g_i exp(x_j − y_i). To stay
    in range, as torch does, split g into its positive and negative parts and sum in log
    space: Σ_{i ≥ j} g⁺_i exp(−y_i) = exp(revLCSE(log g⁺ − y)_j), so
    dL/dx_j = exp(x_j + revLCSE(log g⁺ − y)_j) − exp(x_j + revLCSE(log g⁻ − y)_j).
    float32 computes in float64 (that difference cancels digits).

    A gradient being differentiated (``create_graph=True``: g, x, y are Tensors) takes the plain
    form of the same sum, smooth in g (the split by sign is not): with c = max_j x_j per slice,
    dL/dx_j = exp(x_j − c) · Σ_{i ≥ j} g_i exp(c − y_i), a reversed cumulative sum, with y formed
    again from x there (the saved y is float64 for a float32 input: not the output itself)."""

    differentiable_backward = True
    saved_constants = (1,)   # y: read by the NumPy path only

    @staticmethod
    def forward(ctx, x, axis=0):
        acc = accumulation_dtype(x.dtype) or x.dtype
        with np.errstate(invalid="ignore"):
            y = np.logaddexp.accumulate(x.astype(acc, copy=False), axis=axis)
        ctx.save_for_backward(x, y)
        ctx.axis = axis
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        axis = ctx.axis
        if isinstance(g, Tensor):
            y = x.logcumsumexp(axis)
            c = np.max(x, axis=axis, keepdims=True)
            tail = np.flip(np.cumsum(np.flip(g * np.exp(c - y), axis), axis), axis)   # Σ_{i ≥ j}
            return np.exp(x - c) * tail
        x, g = x.astype(y.dtype, copy=False), g.astype(y.dtype, copy=False)

        def part(gp):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                t = np.log(gp) - y
                r = np.flip(np.logaddexp.accumulate(np.flip(t, axis), axis=axis), axis)
                return np.exp(x + r)
        zero = np.zeros((), g.dtype)
        return part(np.where(g > 0, g, zero)) - part(np.where(g < 0, -g, zero))


class CumExtreme(ArrayFunction):
    """values_i = x at ``idx_i`` (the running max or min's position, found by the caller).
    Each output copies one input, so dL/dx_j = Σ_{i: idx_i = j} g_i: a scatter-add of g
    to the indices (one input may be the max of many positions)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, idx, axis=0):
        ctx.save_for_backward(idx)
        ctx.axis, ctx.shape = axis, x.shape
        return np.take_along_axis(x, idx, axis=axis)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        grid = list(np.indices(idx.shape, sparse=True))
        grid[ctx.axis] = idx
        return put(np.zeros(ctx.shape, np.result_type(g)), tuple(grid), g, accumulate=True), None


# ============================================================================ methods

def _axis(s, dim, axis, op, out=None):
    dim = pick_dim(dim, axis, op, out)
    if dim is None:
        raise TypeError(f"{op}(): missing the required argument 'dim'")
    return canonical_dim(dim, s.ndim, op)


def _scan(fn, op, s, dim, dtype, axis, out=None):
    ax = _axis(s, dim, axis, op, out)
    if dtype is not None:
        s = cast_input(s, dtype, op)
    if s.ndim == 0:
        return fn.apply(s.reshape(1), axis=0).reshape(())
    return fn.apply(s, axis=ax)


def cumsum(s, dim=None, *, dtype=None, axis=None, out=None):
    return _scan(CumSum, "cumsum", s, dim, dtype, axis, out)


def cumprod(s, dim=None, *, dtype=None, axis=None, out=None):
    return _scan(CumProd, "cumprod", s, dim, dtype, axis, out)


def logcumsumexp(s, dim=None, *, axis=None):
    if s._data.dtype.kind not in "fc":
        raise TypeError(f"logcumsumexp(): expected a floating point input, got dtype {s._data.dtype}")
    return _scan(LogCumSumExp, "logcumsumexp", s, dim, None, axis)


def _running_index(x, values, axis):
    """torch's cummax/cummin index: the latest position where the running extreme was
    reached (ties move it forward; a NaN holds it once NaN has been reached, and each
    later NaN moves it)."""
    new = np.isnan(x) | (x == values) if x.dtype.kind == "f" else x == values
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    pos = np.arange(x.shape[axis]).reshape(shape)
    return np.maximum.accumulate(np.where(new, pos, 0), axis=axis).astype(np.int64)


def _cum_extreme(mode):
    op = "cum" + mode
    ufunc = np.maximum if mode == "max" else np.minimum
    result = CummaxResult if mode == "max" else CumminResult

    def f(s, dim=None, *, axis=None):
        from ..tensor import Tensor, _adopt
        ax = _axis(s, dim, axis, op)
        t = s.reshape(1) if s.ndim == 0 else s
        x = t._data
        idx = _running_index(x, ufunc.accumulate(x, axis=ax), ax) if x.size else np.zeros(x.shape, np.int64)
        values = named(CumExtreme.apply(t, idx, axis=ax), f"Cum{mode}Backward0")
        if s.ndim == 0:
            return result(values.reshape(()), _adopt(idx.reshape(())))
        return result(values, _adopt(idx))
    f.__name__ = op
    return f


cummax = _cum_extreme("max")
cummin = _cum_extreme("min")

TENSOR_METHODS = {"cumsum": cumsum, "cumprod": cumprod, "logcumsumexp": logcumsumexp,
                  "cummax": cummax, "cummin": cummin}


FUNCTIONS = {name: as_function(name, fn) for name, fn in TENSOR_METHODS.items()}
