"""Layer normalization: a fused Function with the closed-form backward, and its composite."""
from __future__ import annotations

import numbers

import numpy as np

from ..autograd import Function
from ..tensor import Tensor
from ._util import as_tensor, check_float


class LayerNorm(Function):
    """y = x̂ ∘ γ + β,  x̂ = (x - μ) · ρ,  ρ = 1/√(σ² + eps),
    with μ and σ² the mean and biased variance over the last k dimensions
    (the ``normalized_shape``; D elements per row below).

    Backward. Write ĝ = g ∘ γ (the gradient reaching x̂). Differentiating
    x̂_i = (x_i - μ) ρ with ∂μ/∂x_j = 1/D and ∂ρ/∂x_j = -ρ³ (x_j - μ)/D = -ρ² x̂_j / D:

        ∂x̂_i/∂x_j = ρ (δ_ij - 1/D) - x̂_i ρ x̂_j / D,

    so the three-term closed form

        dL/dx = ρ · (ĝ - mean(ĝ) - x̂ ∘ mean(ĝ ∘ x̂))      (means over the row),
        dL/dγ = Σ_rows g ∘ x̂,        dL/dβ = Σ_rows g.

    The row sums for γ and β are the engine's reduction of the broadcast
    (γ and β were broadcast over the leading dimensions), so the backward
    returns g ∘ x̂ and g. Saved: x̂ (the size of x) and ρ (one per row).
    A constant row has σ² = 0: x̂ = 0, y = β, and dL/dx = ρ (ĝ - mean ĝ) with
    ρ = 1/√eps — finite, as in torch.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, *, ndim_normalized, eps):
        axes = tuple(range(x.ndim - ndim_normalized, x.ndim))
        xhat = x - np.mean(x, axis=axes, keepdims=True)
        # The mean was rounded to x's precision, so x - μ is off by up to half an ulp of μ: for
        # rows far from zero (|μ| >> σ) that error dominates x̂ in float32. The mean of the
        # centred values is that rounding error, computed accurately; removing it makes x̂
        # accurate to a few ulps of σ (about 15x more accurate than torch's float32 for |μ| = 20σ,
        # measured) for one more reduction and subtraction.
        xhat -= np.mean(xhat, axis=axes, keepdims=True)
        var = np.mean(np.square(xhat), axis=axes, keepdims=True)
        rstd = np.sqrt(var + eps)
        np.reciprocal(rstd, out=rstd)
        xhat *= rstd
        if weight is not None:
            y = xhat * weight
            if bias is not None:
                y += bias
        else:
            y = xhat + bias if bias is not None else xhat.copy()
        ctx.save_for_backward(xhat, rstd, weight)
        ctx.axes = axes
        return y

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        dx = None
        if nx:
            ghat = g * weight if weight is not None else g
            dx = ghat - np.mean(ghat, axis=ctx.axes, keepdims=True)
            dx -= xhat * np.mean(ghat * xhat, axis=ctx.axes, keepdims=True)
            dx *= rstd
        return dx, (g * xhat if nw else None), (g if nb else None)


def _check(input, normalized_shape, weight, bias, eps, op):
    x = as_tensor(input, op, "input")
    w = None if weight is None else as_tensor(weight, op, "weight")
    b = None if bias is None else as_tensor(bias, op, "bias")
    check_float(op, input=x, weight=w, bias=b)
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if not shape or any(not isinstance(n, numbers.Integral) or n < 1 for n in shape):
        raise ValueError(f"{op}: normalized_shape must be a non-empty sequence of positive ints, "
                         f"got {normalized_shape!r}")
    if x.shape[x.ndim - len(shape):] != shape or x.ndim < len(shape):
        raise ValueError(f"{op}: input of shape {x.shape} does not end with normalized_shape {shape}")
    for name, t in (("weight", w), ("bias", b)):
        if t is not None and t.shape != shape:
            raise ValueError(f"{op}: {name} has shape {t.shape} but normalized_shape is {shape}")
    if not eps > 0:
        raise ValueError(f"{op}: eps must be positive, got {eps}")
    return x, w, b, len(shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Layer normalization over the trailing ``normalized_shape`` dimensions
    (``torch.nn.functional.layer_norm``); fused forward and closed-form backward."""
    x, w, b, k = _check(input, normalized_shape, weight, bias, eps, "layer_norm")
    return LayerNorm.apply(x, w, b, ndim_normalized=k, eps=float(eps))


def layer_norm_composite(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Layer normalization from primitives: (x - mean) / sqrt(var + eps) * weight + bias.

    Centring twice changes nothing mathematically (centring is a projection), and the
    second pass removes the rounding error of the first mean, as the fused forward does.
    """
    x, w, b, k = _check(input, normalized_shape, weight, bias, eps, "layer_norm_composite")
    dims = tuple(range(-k, 0))
    centered = x - x.mean(dims, keepdim=True)
    centered = centered - centered.mean(dims, keepdim=True)   # remove the mean's rounding (see LayerNorm)
    var = (centered * centered).mean(dims, keepdim=True)
    y = centered / (var + float(eps)).sqrt()
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y
