"""Regression losses: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``.

Each is a pointwise function of the difference d = x - t (input x, target t), written as
one Function whose backward gives both gradients: with ℓ = f(d),

    dL/dx = g f'(d),     dL/dt = -g f'(d).

The optional ``weight`` (same shape as the input, as torch requires) multiplies ℓ; the
reduction then is a composite of the engine's Sum and Mean, whose gradients are torch's:
'none' keeps every ℓ, 'sum' adds them, 'mean' divides the sum by the element count — or, with
a weight, by Σ weight for mse_loss and l1_loss (torch's weighted mean; huber_loss keeps the count). As in torch, a target of another shape is
broadcast against the input (with torch's warning, since it is usually a mistake), an integer
target is cast to the input's dtype, and two float dtypes promote to the wider one.

Every backward runs on Tensors (``differentiable_backward``): it saves x and t (or, for the L1
loss, sign d, piecewise constant) and forms d again, so that ``create_graph=True`` differentiates
it: f''(d) = 2, 0, 1/β inside |d| < β (0 outside), 1 inside |d| < δ (0 outside).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..autograd.node_names import named
from ..core.tensor import Tensor
from ._util import as_tensor, check_real, loss_reduction, reduce_loss


class SquaredError(ArrayFunction):
    """ℓ = d²,  d = x - t.   f'(d) = 2d:  dL/dx = 2 g d,  dL/dt = -2 g d. Saved: x and t."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, t):
        d = x - t
        ctx.save_for_backward(x, t)
        return d * d

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        dx = 2 * g * (x - t)
        return dx, -dx


class AbsoluteError(ArrayFunction):
    """ℓ = |d|.   f'(d) = sign d (0 at d = 0, as torch):  dL/dx = g sign d,  dL/dt = -g sign d.
    Saved: sign d (a constant of the backward: its derivative is 0 almost everywhere)."""

    differentiable_backward = True

    saved_constants = (0,)

    @staticmethod
    def forward(ctx, x, t):
        d = x - t
        ctx.save_for_backward(np.sign(d))
        return np.abs(d)

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        dx = g * s
        return dx, -dx


class SmoothL1Error(ArrayFunction):
    """ℓ = d²/(2β) where |d| < β, else |d| - β/2 (β = ``beta``; β = 0 is the L1 loss).

    f'(d) = d/β where |d| < β, else sign d (the two pieces meet with equal slope at |d| = β).
    Saved: x and t.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, t, *, beta):
        d = x - t
        a = np.abs(d)
        ctx.save_for_backward(x, t)
        ctx.beta = beta
        if beta == 0:
            return a
        return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta).astype(d.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        d = x - t
        beta = ctx.beta
        slope = np.sign(d) if beta == 0 else np.where(np.abs(d) < beta, d / beta, np.sign(d))
        dx = g * slope
        return dx, -dx


class HuberError(ArrayFunction):
    """ℓ = d²/2 where |d| < δ, else δ (|d| - δ/2) (δ = ``delta``) — δ times smooth L1 with β = δ.

    f'(d) = d where |d| <= δ, else δ sign d (equivalently: d clipped to [-δ, δ]). Saved: x and t.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, t, *, delta):
        d = x - t
        a = np.abs(d)
        ctx.save_for_backward(x, t)
        ctx.delta = delta
        return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)).astype(d.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        dx = g * np.clip(x - t, -ctx.delta, ctx.delta)
        return dx, -dx


# ============================================================================ argument handling

def _float_dtype_of(a: Tensor, b: Tensor, op: str):
    """torch's result dtype for a float loss of two tensors: the wider float dtype; an integer
    or bool side takes the other's float dtype; two non-float sides are an error."""
    da, db = a._data.dtype, b._data.dtype
    if da.kind != "f" and db.kind != "f":
        raise TypeError(f"{op}: input and target must be floating point tensors (at least one of "
                        f"them), got dtypes {da} and {db}")
    if da.kind != "f":
        return db
    if db.kind != "f":
        return da
    return np.promote_types(da, db)


def prepare_pair(input, target, op: str):
    """(input, target) as Tensors of one float dtype and broadcastable shapes, warning as torch
    does when the target's shape differs from the input's."""
    x = as_tensor(input, op, "input")
    t = as_tensor(target, op, "target")
    dtype = _float_dtype_of(x, t, op)
    x = x if x._data.dtype == dtype else x.to(dtype)
    t = t if t._data.dtype == dtype else t.to(dtype)
    if x.shape != t.shape:
        try:
            np.broadcast_shapes(x.shape, t.shape)
        except ValueError:
            raise ValueError(f"{op}: target of shape {tuple(t.shape)} does not broadcast against input of "
                             f"shape {tuple(x.shape)}") from None
        warnings.warn(f"{op}: Using a target size ({tuple(t.shape)}) that is different to the input size "
                      f"({tuple(x.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", UserWarning, stacklevel=3)
    return x, t


def _weighted(loss: Tensor, weight, input_shape, reduction: str, op: str, by_weight: bool = True) -> Tensor:
    """ℓ reduced, each element first multiplied by ``weight`` (if given); a weighted 'mean'
    divides by Σ weight (mse_loss, l1_loss) or, with ``by_weight=False``, by the element count
    (huber_loss: torch's weighted Huber mean is mean(w ∘ ℓ))."""
    if weight is None:
        return reduce_loss(loss, reduction)
    w = as_tensor(weight, op, "weight")
    if w.shape != tuple(input_shape):
        raise ValueError(f"{op}: weights and input must have the same size: weight has shape "
                         f"{tuple(w.shape)}, input has shape {tuple(input_shape)}")
    loss = loss * w
    if reduction == "none":
        return loss
    if reduction == "sum" or not by_weight:
        return reduce_loss(loss, reduction)
    return loss.sum() / w.sum()


def _positive(value, op, name, allow_zero):
    v = check_real(op, name, value)
    if v < 0 or (v == 0 and not allow_zero):
        raise InvalidArgumentError(f"{op}: {name} must be {'non-negative' if allow_zero else 'positive'}, "
                         f"got {value}")
    return v


# ============================================================================ the losses

def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
             weight=None) -> Tensor:
    """Mean squared error (``torch.nn.functional.mse_loss``): (x - t)², reduced."""
    reduction = loss_reduction("mse_loss", reduction, size_average, reduce)
    x, t = prepare_pair(input, target, "mse_loss")
    loss = _weighted(SquaredError.apply(x, t), weight, x.shape, reduction, "mse_loss")
    return loss if weight is not None else named(loss, "MseLossBackward0")   # torch's one node


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
            weight=None) -> Tensor:
    """Mean absolute error (``torch.nn.functional.l1_loss``): |x - t|, reduced."""
    reduction = loss_reduction("l1_loss", reduction, size_average, reduce)
    x, t = prepare_pair(input, target, "l1_loss")
    return _weighted(AbsoluteError.apply(x, t), weight, x.shape, reduction, "l1_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """Smooth L1 (``torch.nn.functional.smooth_l1_loss``): quadratic below ``beta``, linear above."""
    reduction = loss_reduction("smooth_l1_loss", reduction, size_average, reduce)
    beta = _positive(beta, "smooth_l1_loss", "beta", allow_zero=True)
    x, t = prepare_pair(input, target, "smooth_l1_loss")
    return named(reduce_loss(SmoothL1Error.apply(x, t, beta=beta), reduction), "SmoothL1LossBackward0")


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None) -> Tensor:
    """Huber loss (``torch.nn.functional.huber_loss``): quadratic below ``delta``, then linear."""
    reduction = loss_reduction("huber_loss", reduction)
    delta = _positive(delta, "huber_loss", "delta", allow_zero=False)
    x, t = prepare_pair(input, target, "huber_loss")
    loss = _weighted(HuberError.apply(x, t, delta=delta), weight, x.shape, reduction, "huber_loss",
                     by_weight=False)
    return loss if weight is not None else named(loss, "HuberLossBackward0")
