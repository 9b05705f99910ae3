"""``F.prelu``: the leaky ReLU whose negative slope is learned, one per channel (or one for all).

    y = x            where x > 0
    y = w_c · x      elsewhere          (w broadcast along the channel dimension 1)

**Backward.** ∂y/∂x = 1 where x > 0, else w_c; ∂y/∂w_c = 0 where x > 0, else x. So

    dL/dx = g ∘ where(x > 0, 1, w)        dL/dw_c = Σ_{positions of channel c, x ≤ 0} g · x

(the second returned with x's shape; the engine sums it down to w's broadcast shape (1, C, 1, ...),
and the reshape back to (C,) is its own op). At x = 0 the derivative is taken from the left, as
torch's kernel does (dL/dx = w·g, dL/dw = 0).
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_float

__all__ = ["PReluFn", "prelu"]


class PReluFn(ArrayFunction):
    """y = where(x > 0, x, w·x); backward in the module docstring (it runs on Tensors: both
    gradients are linear in g, x and w, so they differentiate again)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return np.where(x > 0, x, w * x)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        positive = x > 0
        gx = np.where(positive, g, w * g) if ctx.needs_input_grad[0] else None
        gw = np.where(positive, 0, x * g) if ctx.needs_input_grad[1] else None   # g's dtype: 0 is a weak scalar
        return gx, gw


def prelu(input, weight) -> Tensor:
    """``torch.nn.functional.prelu(input, weight)``: ``weight`` has 1 element or one per channel
    (dimension 1 of ``input``; an input of fewer than 2 dimensions has one channel)."""
    x = as_tensor(input, "prelu", "input")
    w = as_tensor(weight, "prelu", "weight")
    check_float("prelu", input=x, weight=w)
    if w.ndim > 1:
        raise RuntimeError(f"prelu: weight must be a scalar or a 1-D tensor, got shape {tuple(w.shape)}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.numel() not in (1, channels):
        raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                           f"numbers = {w.numel()} and channel size = {channels} (input shape {tuple(x.shape)}).")
    if w.numel() == 1:
        w = w.reshape(())
    else:
        w = w.reshape((1, channels) + (1,) * (x.ndim - 2))
    return PReluFn.apply(x, w)
