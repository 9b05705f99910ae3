"""Comparison-based pointwise ops: clamp with tensor bounds, the closeness tests (isclose,
allclose, equal), and the logical and bitwise ops. Bound as Tensor methods and top-level
functions by ``ops/binary.py``. Only clamp is differentiable; the rest return bool or integer
tensors (or Python bools), which carry no gradient.
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction
from ..core import seam as _seam
from ..core import dtypes
from ..tensor import Tensor, _adopt, _as_operand, _promote_pair, _to_dtype
from . import elementwise as _E
from .transcendental import _quiet


# ============================================================================ clamp with tensor bounds

class ClampTensor(ArrayFunction):
    """y = min(max(x, lo), hi) with tensor (or None) bounds that broadcast against x.

    dL/dx = g where lo <= x <= hi (inclusive, as torch), else 0. A bound receives the gradient
    where it is the output: dL/dlo = g where x < lo (and lo < hi when both are given),
    dL/dhi = g where x > hi (or hi < lo: then hi wins everywhere, as min(max(x, lo), hi) = hi)
    -- torch's clamp_backward_min_max."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, lo, hi):
        y = x
        if lo is not None:
            y = np.maximum(y, lo)
        if hi is not None:
            y = np.minimum(y, hi)
        ctx.save_for_backward(x, lo, hi)
        return y

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved_tensors
        nx, nlo, nhi = ctx.needs_input_grad
        zero = 0
        keep = x >= lo if lo is not None else None   # lo <= x <= hi; a missing bound holds
        if hi is not None:
            keep = x <= hi if keep is None else keep & (x <= hi)
        gx = np.where(keep, g, zero) if nx else None
        glo = ghi = None
        if nlo:
            below = (x < lo) & (lo < hi) if hi is not None else x < lo
            glo = np.where(below, g, zero)
        if nhi:
            above = (x > hi) | (hi < lo) if lo is not None else x > hi
            ghi = np.where(above, g, zero)
        return gx, glo, ghi


def clamp(self, min=None, max=None):
    """min(max(x, min), max) with scalar or tensor bounds (torch.clamp)."""
    if not isinstance(min, Tensor) and not isinstance(max, Tensor):
        if min is None and max is None:
            raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
        # the result type of (x, min, max) as torch's: bool.clamp(0, 1) is int64, int.clamp(0.5)
        # float32; a bound then wraps into a narrower int dtype as torch's does (uint8: -1 is 255)
        dt = dtypes.result_np(self, *(b for b in (min, max) if b is not None))
        x = self if self._data.dtype == dt else self.to(dt)
        lo, hi = (None if b is None else _to_dtype(b, dt)[()] for b in (min, max))
        return _E.Clamp.apply(x, min=lo, max=hi)
    x = self
    bounds = []
    for b in (min, max):
        if b is not None:
            b = _as_operand(b, x)
            x, b = _promote_pair(x, b)
        bounds.append(b)
    lo, hi = bounds
    try:
        np.broadcast_shapes(*(np.shape(t) for t in (x, lo, hi) if t is not None))
    except ValueError:
        raise ValueError(f"clamp: input {np.shape(x)}, min {np.shape(lo)} and max {np.shape(hi)} "
                         f"are not broadcastable") from None
    return ClampTensor.apply(x, lo, hi)


def clamp_min(self, min):
    return clamp(self, min=min)


def clamp_max(self, max):
    return clamp(self, max=max)


# ============================================================================ closeness and equality

def _tensor_pair(op, a, b):
    for name, t in (("input", a), ("other", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    return a._data, b._data


def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol |b| elementwise (bool, no gradient); equal values (infinities
    included) are close; nan is close to nan only with equal_nan."""
    a, b = _tensor_pair("isclose", self, other)
    if a.dtype != b.dtype:
        raise TypeError(f"isclose: input and other must have the same dtype, got {a.dtype} and {b.dtype}")
    if rtol < 0:
        raise ValueError(f"isclose: rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise ValueError(f"isclose: atol must be greater than or equal to zero, but got {atol}")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"isclose: shapes {tuple(a.shape)} and {tuple(b.shape)} are not broadcastable") from None
    close = a == b
    if a.dtype == np.bool_:
        return _adopt(close)
    if equal_nan:
        close = close | (np.isnan(a) & np.isnan(b))
    work = a.dtype if a.dtype.kind == "f" else np.float64
    a, b = a.astype(work, copy=False), b.astype(work, copy=False)
    with _quiet():
        actual = np.abs(a - b)
        close = close | (np.isfinite(actual) & (actual <= atol + np.abs(rtol * b)))
    return _adopt(close)


def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when every element is close (``isclose``), as a Python bool."""
    close = isclose(self, other, rtol, atol, equal_nan)
    _seam.read(close, "allclose()")
    return bool(np.all(close._data))


def equal(self, other) -> bool:
    """True when both tensors have the same shape and the same values (nan != nan)."""
    a, b = _tensor_pair("equal", self, other)
    _seam.read(self, "equal()")
    _seam.read(other, "equal()")
    return bool(a.shape == b.shape and np.array_equal(a, b))


# ============================================================================ logical and bitwise

def _integer_bits(op, npfn):
    """Bitwise ops: ints and bools only (for bools they are the logical ops)."""
    def method(self, other):
        b = other._data if isinstance(other, Tensor) else np.asarray(other)
        for x in (self._data, b):
            if x.dtype.kind not in "iub":
                raise TypeError(f"{op}: only integer and bool tensors, got dtype {x.dtype}")
        a, b = _promote_pair(self, _as_operand(other, self))   # torch's result type: uint8 & 3 is uint8
        b = b._data if isinstance(b, Tensor) else b
        return _adopt(_seam.call(_E._binary, op, npfn, a._data, b))   # recorded by tinygrad_tx.compile
    method.__name__ = op
    return method


def logical(npfn):
    """A logical op (bool result: nonzero is True), no gradient."""
    def method(self, other):
        if not isinstance(other, Tensor):   # torch's logical_and(t, True) is a TypeError
            raise TypeError(f"{npfn.__name__}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__} ({other!r})")
        return _adopt(_seam.call(_E._binary, npfn.__name__, npfn, self._data, other._data))
    return method


def bitwise_not(self):
    if self._data.dtype.kind not in "iub":
        raise TypeError(f"bitwise_not (~): only integer and bool tensors, got dtype {self._data.dtype}")
    return _adopt(_seam.call(np.invert, self._data))


bitwise_and = _integer_bits("bitwise_and", np.bitwise_and)
bitwise_or = _integer_bits("bitwise_or", np.bitwise_or)
bitwise_xor = _integer_bits("bitwise_xor", np.bitwise_xor)
