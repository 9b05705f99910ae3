"""Shrinkage: ``hardshrink`` and ``softshrink`` (``torch.nn.functional``; ``torch.hardshrink`` and
``Tensor.hardshrink`` too), each one Function with its backward beside it.

This file is also the example of what adding an op takes (``docs/engine.md``, "Adding an op"):
the file, with its tables below (``TENSOR_METHODS``, ``FUNCTIONS``, ``FUNCTIONAL``); one line
naming it in ``tinygrad_tx/_bind.py``'s ``MODULES``; and its entry in ``reference/opdb.py``, which
makes the tests (values and random-cotangent gradients against torch, finite differences, second
derivatives, in-place and view behaviour, compile replay). ``explain hardshrink`` finds it.

Notation: y = f(x), g = dL/dy, λ = ``lambd``; the region |x| ≤ λ is the dead zone.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor


class HardshrinkFn(ArrayFunction):
    """y = x where |x| > λ, 0 in the dead zone -λ ≤ x ≤ λ.

    dy/dx = 1 outside the dead zone, 0 inside it (at x = ±λ too, as torch), so
    dL/dx = g ∘ [x < -λ or x > λ]. A NaN input gives NaN and a zero gradient, as torch's.
    Saved: x (the mask is recomputed from it).
    """

    differentiable_backward = True   # a mask times g: its derivative in g is the same mask

    @staticmethod
    def forward(ctx, x, *, lambd):
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        return np.where((x >= -lambd) & (x <= lambd), np.zeros((), x.dtype), x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ((x < -ctx.lambd) | (x > ctx.lambd))


class SoftshrinkFn(ArrayFunction):
    """y = x - λ where x > λ, x + λ where x < -λ, 0 in the dead zone.

    Outside the dead zone y = x ∓ λ, so dy/dx = 1; inside it y = 0, so dy/dx = 0:
    dL/dx = g ∘ [x < -λ or x > λ], the same mask as hardshrink's. Saved: x.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, lambd):
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        lam = x.dtype.type(lambd)   # x - λ in x's dtype (float32 stays float32, as torch's kernel)
        return np.where(x > lam, x - lam, np.where(x < -lam, x + lam, x * 0))   # x * 0: NaN stays NaN

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ((x < -ctx.lambd) | (x > ctx.lambd))


def _shrink_input(input, op: str, lambd) -> Tensor:
    x = as_tensor(input, op, "input")
    if x._data.dtype.kind != "f":
        raise NotImplementedError(f'"{op}" not implemented for {x.dtype} (input must be a floating point tensor)')
    if not isinstance(lambd, numbers.Real) or isinstance(lambd, bool):
        raise TypeError(f"{op}: lambd must be a number, got {type(lambd).__name__} ({lambd!r})")
    return x


def hardshrink(input, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (``torch.nn.functional.hardshrink``)."""
    return HardshrinkFn.apply(_shrink_input(input, "hardshrink", lambd), lambd=float(lambd))


def softshrink(input, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, else 0 (``torch.nn.functional.softshrink``);
    lambd must be ≥ 0, as torch's."""
    x = _shrink_input(input, "softshrink", lambd)
    if not lambd >= 0:
        raise RuntimeError(f"softshrink: lambda must be in range [0, inf) for input dtype {x.dtype}, "
                           f"but found lambd={lambd!r}")
    return SoftshrinkFn.apply(x, lambd=float(lambd))


TENSOR_METHODS = {"hardshrink": hardshrink}       # torch has Tensor.hardshrink, not Tensor.softshrink
FUNCTIONS = {"hardshrink": hardshrink}            # torch.hardshrink
FUNCTIONAL = {"hardshrink": hardshrink, "softshrink": softshrink}   # F.hardshrink, F.softshrink
