"""Pointwise activations and dropout.

relu, tanh, sigmoid and gelu are primitives of the engine (their forward and
backward live in ``tinygrad_tx/ops/elementwise.py``); here they get torch's
functional spelling. ``gelu_composite`` rebuilds the tanh approximation from
primitives. Dropout is a fused Function with a composite twin.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, check_probability, keep_mask, keep_scale_of

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


def _float_input(input, op):
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    return x


def relu(input, inplace: bool = False) -> Tensor:
    """max(x, 0) (``torch.nn.functional.relu``); ``inplace=True`` overwrites ``input`` and returns
    it (``Tensor.relu_``, with torch's autograd rules for in-place ops)."""
    if not isinstance(inplace, bool):
        raise TypeError(f"relu: inplace must be a bool, got {inplace!r}")
    x = _float_input(input, "relu")
    return x.relu_() if inplace else x.relu()


def tanh(input) -> Tensor:
    """tanh(x) (``torch.tanh``)."""
    return _float_input(input, "tanh").tanh()


def sigmoid(input) -> Tensor:
    """1 / (1 + e^-x) (``torch.sigmoid``)."""
    return _float_input(input, "sigmoid").sigmoid()


def gelu(input, approximate: str = "none") -> Tensor:
    """GELU (``torch.nn.functional.gelu``): x Φ(x) exactly (``'none'``) or with the tanh
    approximation (``'tanh'``). The derivations are in ``ops.elementwise.GeluFn``."""
    if not isinstance(approximate, str):   # torch: argument 'approximate' must be str
        raise TypeError(f"gelu(): argument 'approximate' must be str, not {type(approximate).__name__} "
                        f"({approximate!r})")
    if approximate not in ("none", "tanh"):   # torch: RuntimeError
        raise InvalidArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _float_input(input, "gelu").gelu(approximate=approximate)


def gelu_composite(input, approximate: str = "tanh") -> Tensor:
    """GELU's tanh approximation from primitives: x/2 · (1 + tanh u),  u = √(2/π) (x + 0.044715 x³).

    Written as x · σ(2u), the same function (1 + tanh u = 2σ(2u)): for u << 0,
    tanh u rounds to -1 and 1 + tanh u cancels to 0 (in float32 from x ≈ -5 on,
    a 100% relative error), while σ(2u) = e^{2u}/(1 + e^{2u}) keeps full
    precision. Only the tanh form has a composite: the exact form needs erf,
    which is not a Tensor primitive (exact GELU is itself the primitive
    ``Tensor.gelu``).
    """
    if approximate != "tanh":
        raise ValueError(f"gelu_composite: only approximate='tanh' can be built from primitives "
                         f"(exact GELU needs erf; use gelu(x)), got {approximate!r}")
    x = _float_input(input, "gelu_composite")
    u = (x + x * x * x * 0.044715) * _SQRT_2_OVER_PI
    return x * (u * 2.0).sigmoid()


# ============================================================================ dropout

class DropoutFn(ArrayFunction):
    """y = x ∘ m / (1 - p), m_i ~ Bernoulli(1 - p) drawn once in the forward.

    Scaling the kept entries by 1/(1-p) keeps E[y] = x, so evaluation (no
    dropout) needs no rescaling. y is linear in x with a fixed mask, so
        dL/dx = g ∘ m / (1 - p).
    Saved: the boolean mask (one byte per element). The backward runs on Tensors as it is
    (the mask is a constant), so gradients of gradients differentiate it.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, keep, scale):
        ctx.save_for_backward(keep)
        ctx.scale = scale
        y = kernels.dropout_scale(x, keep, scale, pooled=True)   # one C pass (docs/kernels.md)
        if y is None:
            y = x * keep
            y *= scale
        return y

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        dx = kernels.dropout_scale(g, keep, ctx.scale)
        return (g * keep) * ctx.scale if dx is None else dx


def _check_dropout(input, p, op, training=True):
    if not isinstance(training, (bool, np.bool_)):   # torch: argument 'train' must be bool
        raise TypeError(f"{op}(): argument 'training' must be bool, not {type(training).__name__} ({training!r})")
    x = _float_input(input, op)
    return x, check_probability(op, "p", p)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False, generator=None) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p)
    (``torch.nn.functional.dropout``). With ``training=False`` or ``p == 0`` the input is
    returned unchanged; ``p == 1`` gives zeros. ``generator`` is a ``np.random.Generator``
    (default: the global one, ``tinygrad_tx.manual_seed``). ``inplace=True`` writes the result
    into ``input`` with torch's in-place autograd rules (``ops/inplace.apply_inplace``) and
    returns it, as torch's."""
    if not isinstance(inplace, bool):
        raise TypeError(f"dropout: inplace must be a bool, got {inplace!r}")
    x, p = _check_dropout(input, p, "dropout", training)
    if not training or p == 0.0:
        return x
    keep, scale = keep_mask(x.shape, p, generator), keep_scale_of(p, x.dtype)
    if inplace:
        from ..ops.inplace import apply_inplace
        return apply_inplace(x, "dropout_", lambda t: DropoutFn.apply(t, keep=keep, scale=scale))
    return DropoutFn.apply(x, keep=keep, scale=scale)


class DropoutAdd(ArrayFunction):
    """out = r + x ∘ m / (1 - p): ``dropout(x)`` added to the residual r in one op (one C pass
    where kernels run), m the same keep mask ``dropout`` draws.

    out is r plus a linear function of x with the fixed mask m and s = 1/(1-p), so
        ∂out/∂r = I            ⇒  dL/dr = g
        ∂out/∂x = diag(m s)    ⇒  dL/dx = (g ∘ m) s
    — what the unfused ``r + dropout(x)`` gives (Add passes g to both sides, ``DropoutFn``
    scales the x side), by the same operations in the same order: forward and gradients equal
    it bit for bit. Saved: the mask. The backward runs on Tensors as it is (the mask is a
    constant), so gradients of gradients differentiate it.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, r, x, *, keep, scale):
        ctx.save_for_backward(keep)
        ctx.scale = scale
        out = kernels.dropout_add(r, x, keep, scale)   # one C pass (docs/kernels.md)
        if out is None:
            y = x * keep                               # the unfused path's operations
            y *= scale
            out = r + y
        return out

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        dx = kernels.dropout_scale(g, keep, ctx.scale)
        return g, ((g * keep) * ctx.scale if dx is None else dx)


def dropout_add(residual, input, p: float = 0.5, training: bool = True, generator=None) -> Tensor:
    """``residual + dropout(input, p, training)`` as one op: the same mask from the same generator
    state, the same values and gradients bit for bit, one pass where C kernels run (the
    transformer's ``x + dropout(sublayer(x))``). Shapes or dtypes that differ (a broadcast
    residual, a number) and ``training=False`` or ``p == 0`` run the unfused expression itself."""
    x, p = _check_dropout(input, p, "dropout_add", training)
    r = residual
    if not training or p == 0.0 or not isinstance(r, Tensor) or r.shape != x.shape or r.dtype != x.dtype:
        return r + dropout(x, p, training, generator=generator)
    keep, scale = keep_mask(x.shape, p, generator), keep_scale_of(p, x.dtype)
    return DropoutAdd.apply(r, x, keep=keep, scale=scale)


def dropout_composite(input, p: float = 0.5, training: bool = True, inplace: bool = False,
                      generator=None) -> Tensor:
    """Dropout from primitives: multiply by the constant m / (1 - p) (the same mask as
    ``dropout`` draws from the same generator state)."""
    x, p = _check_dropout(input, p, "dropout_composite", training)
    if not training or p == 0.0:
        return x
    multiplier = keep_mask(x.shape, p, generator) * keep_scale_of(p, x.dtype)
    return x * Tensor(multiplier.astype(x.dtype))
