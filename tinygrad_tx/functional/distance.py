"""Norms and distances: ``normalize``, ``cosine_similarity``, ``pairwise_distance``.

All three are composites, as in torch, around one Function, :class:`VectorNorm` (the p-norm
along a dimension, with torch's gradient conventions at 0 and at ties), so their gradients
are torch's.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..tensor import Tensor, _canonical_dim
from ._util import as_tensor, check_float, check_real


class VectorNorm(ArrayFunction):
    """y = ‖x‖_p along ``dim``:  (Σ |x_i|^p)^{1/p};  max |x_i| for p = inf;  the count of
    nonzero x_i for p = 0.

    Backward (n = y, broadcast back along ``dim``):
        p = 2:      dL/dx = g x / n,
        general p:  dL/dx = g sign(x) |x|^{p-1} / n^{p-1}  (∂/∂x_i of (Σ|x|^p)^{1/p}),
        p = 1:      dL/dx = g sign(x),
        p = inf:    g sign(x) where |x_i| = n, shared equally among ties (torch's choice),
        p = 0:      0 (a count is piecewise constant).
    Where n = 0 the gradient is 0 (torch's subgradient; the formula would be 0/0).
    Saved: x and the output n. float32 norms are summed in float64 and rounded once; the
    backward, like torch's, works in x's dtype, on the saved input and output only, so that it
    runs on Tensors and ``create_graph=True`` differentiates it again.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, p, dim, keepdim):
        x_in, dtype = x, x.dtype
        x = x.astype(np.float64, copy=False)
        a = np.abs(x)
        if p == 2:
            n = np.sqrt(np.sum(x * x, axis=dim, keepdims=True))
        elif p == 1:
            n = np.sum(a, axis=dim, keepdims=True)
        elif p == np.inf:
            n = np.max(a, axis=dim, keepdims=True, initial=0)
        elif p == -np.inf:
            n = np.min(a, axis=dim, keepdims=True, initial=np.inf)
        elif p == 0:
            n = np.sum(x != 0, axis=dim, keepdims=True).astype(x.dtype)
        else:
            with np.errstate(divide="ignore"):
                n = np.sum(a ** p, axis=dim, keepdims=True) ** (1.0 / p)
        n = n.astype(dtype, copy=False)
        out = n if keepdim else np.squeeze(n, dim)
        ctx.save_for_backward(x_in, out)
        ctx.dtype = dtype
        ctx.p, ctx.dim, ctx.keepdim = p, dim, keepdim
        return out

    @staticmethod
    def backward(ctx, g):
        x, n = ctx.saved_tensors
        p, dim = ctx.p, ctx.dim
        if not ctx.keepdim:                       # put the reduced axis back
            n, g = np.expand_dims(n, dim), np.expand_dims(g, dim)
        if p == 0:
            return np.zeros(x.shape, ctx.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 2:
                dx = x * np.where(n == 0, 0, g / n)
            elif p == 1:
                dx = np.sign(x) * g
            elif np.isinf(p):
                tie = np.abs(x) == n
                dx = np.sign(x) * tie * (g / np.sum(tie, axis=dim, keepdims=True))
            else:
                dx = np.sign(x) * np.abs(x) ** (p - 1) * np.where(n == 0, 0, g / n ** (p - 1))
        return np.astype(dx, ctx.dtype, copy=False)


def _p(p, op) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{op}: p must be a number, got {p!r}")
    return float(p)


def vector_norm(x: Tensor, p, dim: int, keepdim: bool) -> Tensor:
    return VectorNorm.apply(x, p=p, dim=dim, keepdim=keepdim)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """x / max(‖x‖_p, eps) along ``dim`` (``torch.nn.functional.normalize``): a composite of
    the norm, a clamp (whose gradient is 0 where the norm is below eps) and a division."""
    op = "normalize"
    if out is not None:
        raise NotImplementedError(f"{op}: out= is not supported; use the returned tensor")
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    d = _canonical_dim(dim, x.ndim, op)
    return x / vector_norm(x, _p(p, op), d, True).clamp(min=check_real(op, "eps", eps))


def _clamped_keep_grad(n: Tensor, eps: float) -> Tensor:
    """max(n, eps) in value, with the gradient of n itself: torch clamps the norms of
    cosine_similarity in place under no_grad, so its backward never sees the clamp."""
    return n + Tensor(np.maximum(n._data, eps) - n._data)


def _broadcast_pair(x1, x2, op):
    a = as_tensor(x1, op, "x1")
    b = as_tensor(x2, op, "x2")
    check_float(op, x1=a, x2=b)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise InvalidArgumentError(f"{op}: shapes of x1 {tuple(a.shape)} and x2 {tuple(b.shape)} do not broadcast") from None
    return a, b, shape


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Σ (x1/‖x1‖)(x2/‖x2‖) along ``dim`` of the broadcast inputs, each norm clamped to >= eps
    (``torch.nn.functional.cosine_similarity``; torch's formulation and gradient)."""
    op = "cosine_similarity"
    a, b, shape = _broadcast_pair(x1, x2, op)
    d = _canonical_dim(dim, len(shape), op)
    a = a if a.shape == shape else a.expand(*shape)
    b = b if b.shape == shape else b.expand(*shape)
    na = _clamped_keep_grad(vector_norm(a, 2.0, d, True), check_real(op, "eps", eps))
    nb = _clamped_keep_grad(vector_norm(b, 2.0, d, True), check_real(op, "eps", eps))
    return ((a / na) * (b / nb)).sum(d)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """‖x1 - x2 + eps‖_p along the last dimension (``torch.nn.functional.pairwise_distance``)."""
    op = "pairwise_distance"
    a, b, shape = _broadcast_pair(x1, x2, op)
    if not shape:
        raise ValueError(f"{op}: inputs must have at least one dimension, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return vector_norm(a - b + check_real(op, "eps", eps), _p(p, op), len(shape) - 1, bool(keepdim))
