"""Softmax and log-softmax along a dimension: fused Functions and their composites.

Read the composites first (``softmax_composite``, ``log_softmax_composite``):
they are the definitions written with Tensor primitives, and autograd
differentiates them op by op. The fused Functions compute the same values in
one pass and replace the chain of primitive backwards by the closed form
derived in their docstrings.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..tensor import Tensor, _canonical_dim
from ._util import as_tensor, check_float


def _axis(x: np.ndarray, dim: int):
    """The NumPy axis for ``dim`` (None for a 0-d array, which NumPy reduces as a whole)."""
    return dim if x.ndim else None


def _shifted(x: np.ndarray, axis):
    """x - max(x) along ``axis``: a new array whose entries are all <= 0, so exp never overflows.

    ``initial=-inf`` makes the max of an empty slice -inf instead of an error.
    """
    with np.errstate(invalid="ignore"):  # an all -inf slice gives nan, as in torch
        return np.asarray(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))  # 0-d: an array


class Softmax(Function):
    """y = softmax(x) along ``dim``:  y_i = e^{x_i - m} / Σ_k e^{x_k - m},  m = max_k x_k.

    Subtracting m changes nothing (the factor e^{-m} cancels between numerator
    and denominator) but keeps every exponent <= 0: logits of ±1000 give exact
    probabilities instead of inf/inf.

    Backward.  ∂y_i/∂x_j = y_i (δ_ij - y_j), so
        dL/dx_j = Σ_i g_i y_i (δ_ij - y_j) = y_j (g_j - Σ_i g_i y_i),
    i.e.  dx = y ∘ (g - ⟨g, y⟩), the inner product taken along ``dim``.
    Only the output is needed, so the output is what we save.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        axis = _axis(x, dim)
        y = _shifted(x, axis)
        np.exp(y, out=y)
        y /= np.sum(y, axis=axis, keepdims=True)
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        inner = np.sum(g * y, axis=ctx.axis, keepdims=True)
        dx = g - inner
        dx *= y
        return dx


class LogSoftmax(Function):
    """y = log softmax(x) along ``dim``:  y_i = x_i - logsumexp(x),
    logsumexp(x) = m + log Σ_k e^{x_k - m}  (m = max_k x_k; the log-sum-exp trick:
    no exp overflows, and the log never sees 0 because the largest term is e^0 = 1).

    Backward.  ∂y_i/∂x_j = δ_ij - softmax(x)_j, so
        dL/dx_j = g_j - softmax(x)_j Σ_i g_i,
    i.e.  dx = g - e^y Σ g  (softmax = e^y). We save y and exponentiate it again
    in the backward rather than keeping a second array of the input's size.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        axis = _axis(x, dim)
        y = _shifted(x, axis)
        y -= np.log(np.sum(np.exp(y), axis=axis, keepdims=True))
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        p = np.exp(y)
        p *= np.sum(g, axis=ctx.axis, keepdims=True)
        return g - p


def _prepare(input, dim, op):
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    return x, _canonical_dim(dim, x.ndim, op)


def softmax(input, dim: int) -> Tensor:
    """Softmax along ``dim`` (``torch.nn.functional.softmax``); fused forward and backward.

    A slice that is entirely -inf has no defined softmax: the result is nan,
    as in torch (attention handles fully masked rows itself; see
    ``scaled_dot_product_attention``).
    """
    x, d = _prepare(input, dim, "softmax")
    return Softmax.apply(x, dim=d)


def log_softmax(input, dim: int) -> Tensor:
    """log(softmax(input)) along ``dim``, computed stably (``torch.nn.functional.log_softmax``)."""
    x, d = _prepare(input, dim, "log_softmax")
    return LogSoftmax.apply(x, dim=d)


def softmax_composite(input, dim: int) -> Tensor:
    """Softmax from primitives: exp(x - max) / sum(exp(x - max)).

    The max is detached: softmax does not depend on the shift (its gradient
    through the max is exactly zero), so it is a constant for autograd.
    """
    x, d = _prepare(input, dim, "softmax_composite")
    e = (x - x.detach().amax(d, keepdim=True)).exp()
    return e / e.sum(d, keepdim=True)


def log_softmax_composite(input, dim: int) -> Tensor:
    """log softmax from primitives: s - log(sum(exp(s))) with s = x - max(x) (max detached)."""
    x, d = _prepare(input, dim, "log_softmax_composite")
    s = x - x.detach().amax(d, keepdim=True)
    return s - s.exp().sum(d, keepdim=True).log()
