"""More activations, as in ``torch.nn.functional``: each a Function with forward and backward.

Notation: ``y = f(x)`` is the forward, ``g = dL/dy`` the incoming gradient, and every
backward returns ``dL/dx = g ∘ f'(x)`` (pointwise). σ is the logistic sigmoid and
sp(x) = log(1 + e^x) the softplus; both are computed in the overflow-free forms

    σ(x) = 1/(1 + e^-x)  (x >= 0),   e^x/(1 + e^x)  (x < 0);
    sp(x) = max(x, 0) + log1p(e^-|x|).

Where torch's derivative at a kink takes a particular side (relu6 and hardtanh have zero
gradient *at* their corners, leaky_relu has the slope at 0, hardswish has 0 at x = -3 and
1 at x = 3), the backward takes the same side; the docstrings say which.

Every backward here is differentiable (``differentiable_backward = True``): it runs unchanged on
Tensors under ``create_graph=True`` (``autograd/dispatch.py``), so what it reads is the input, a
mask (which has no derivative), or an intermediate such as σ(x) that the op names in
``saved_recomputed``: kept for the first-order backward, computed again from x (with its
history) when the backward is differentiated. Hardsigmoid is the exception, as in torch (whose
``hardsigmoid_backward`` has no derivative): differentiating its gradient raises.

``inplace=True`` (where torch has the keyword) computes the same Function out of place and
writes the result into the input with torch's in-place autograd rules
(``ops/inplace.apply_inplace``: a leaf that requires grad refuses, a value saved for a backward
and then overwritten raises at that backward), returning the input, as torch's ``silu_`` does.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..ops.elementwise import _sigmoid
from ..core.dtypes import default_float
from ..tensor import Tensor, _canonical_dim
from ._util import as_tensor, check_float

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_ONE_SIXTH_F32 = float(np.float32(1 / 6))   # torch's hardsigmoid backward multiplies by float32(1/6)


def sigmoid_np(x: np.ndarray) -> np.ndarray:
    """σ(x) without overflow, in x's dtype (``ops.elementwise._sigmoid``: 1/(1+e^-x), and
    e^x/(1+e^x) where e^-x overflows; ``kernels.sigmoid`` where SigmoidFn uses it). On a Tensor (a backward being differentiated,
    ``autograd/dispatch.py``) it is the Tensor's ``sigmoid``: the same value, recorded."""
    if isinstance(x, Tensor):
        return x.sigmoid()
    # the value Tensor.sigmoid gives, bit for bit: where a kernel computes it, so does this one.
    # (Bernoulli(logits).entropy() is BCE-with-logits(l, σ(l)): its gradient σ(l) - p cancels to
    # exactly 0 only when both σ are the same number; an ulp apart, the float32 gradient near l = 0
    # was 3e-6 off where torch's is 4e-8.)
    fast = kernels.sigmoid(x) if isinstance(x, np.ndarray) else None   # (-x of a 0-d array is a scalar)
    return _sigmoid(x) if fast is None else fast


def softplus_np(x: np.ndarray) -> np.ndarray:
    """sp(x) = log(1 + e^x) without overflow, in x's dtype."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _float_input(input, op, inplace=False):
    """``input`` as a floating-point Tensor (torch has no integer kernel for these ops)."""
    if not isinstance(inplace, bool):
        raise TypeError(f"{op}: inplace must be a bool, got {inplace!r}")
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    return x


def _in_place_if(inplace: bool, x: Tensor, op: str, compute) -> Tensor:
    """``compute(x)``, or with ``inplace`` its value written into ``x`` (``apply_inplace``)."""
    if not inplace:
        return compute(x)
    from ..ops.inplace import apply_inplace
    return apply_inplace(x, op + "_", compute)


def _promoted_input(input, op):
    """``input`` as a Tensor, integers and bools promoted to the default float (torch's composites
    softsign and tanhshrink accept them that way)."""
    x = as_tensor(input, op, "input")
    if x._data.dtype.kind not in "f":
        x = Tensor(x._data.astype(default_float()))
    return x


def _number(value, op, name):
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a number, got {value!r}")
    return float(value)


# ============================================================================ sigmoid family

class SiluFn(ArrayFunction):
    """y = x σ(x)  (SiLU, "swish").

    dy/dx = σ(x) + x σ(x)(1 - σ(x)) = σ(x) (1 + x (1 - σ(x))),
    so dL/dx = g σ (1 + x (1 - σ)). Saved: x and σ(x) (recomputed from x when the backward is
    differentiated: d²y/dx² = σ(1 - σ)(2 + x (1 - 2σ))).

    Where a C compiler is found, ``kernels.silu`` / ``silu_backward`` run each direction as one
    C pass (the backward from x, σ recomputed, as torch's); σ is then not saved (its slot holds
    None; under ``create_graph=True`` it is recomputed from x as always).
    """

    differentiable_backward = True
    saved_recomputed = {1: lambda ctx, x, s: x.sigmoid()}

    @staticmethod
    def forward(ctx, x):
        y = kernels.silu(x)                          # one C pass (docs/kernels.md)
        if y is not None:
            ctx.save_for_backward(x, None)
            return y
        s = sigmoid_np(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        if s is None:                                # the kernel ran forward: arrays only
            dx = kernels.silu_backward(x, g)
            if dx is not None:
                return dx
            s = sigmoid_np(x)
        return g * s * (1 + x * (1 - s))


class SoftplusFn(ArrayFunction):
    """y = sp(βx)/β, and y = x where βx > threshold (torch's linear regime).

    d/dx [sp(βx)/β] = σ(βx), so dL/dx = g σ(βx), and g where βx > threshold.
    Saved: x. Where a C compiler is found, ``kernels.softplus`` / ``softplus_backward`` run each
    direction as one C pass (the same formulas, from x).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, beta, threshold):
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        y = kernels.softplus(x, beta, threshold)     # one C pass (docs/kernels.md)
        if y is not None:
            return y
        z = x * beta
        return np.where(z > threshold, x, softplus_np(z) / beta).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if type(x) is np.ndarray and type(g) is np.ndarray:
            dx = kernels.softplus_backward(x, g, ctx.beta, ctx.threshold)
            if dx is not None:
                return dx
        z = x * ctx.beta
        return g * np.where(z > ctx.threshold, 1, sigmoid_np(z))


class MishFn(ArrayFunction):
    """y = x tanh(sp(x)).

    With t = tanh(sp(x)): dt/dx = (1 - t²) sp'(x) = (1 - t²) σ(x), so
    dy/dx = t + x σ(x) (1 - t²). Saved: x.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * np.tanh(softplus_np(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = np.tanh(softplus_np(x))
        return g * (t + x * sigmoid_np(x) * (1 - t * t))


class LogSigmoidFn(ArrayFunction):
    """y = log σ(x) = -sp(-x) = min(x, 0) - log1p(e^-|x|).

    dy/dx = σ'(x)/σ(x) = 1 - σ(x) = σ(-x), so dL/dx = g σ(-x). Saved: x.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * sigmoid_np(-x)


class GluFn(ArrayFunction):
    """Gated linear unit: x split in halves a, b along ``dim``;  y = a ∘ σ(b).

    dL/da = g σ(b),   dL/db = g a σ(b)(1 - σ(b));  the two halves of dL/dx are
    concatenated back along ``dim``. Saved: x and σ(b) (recomputed from x when the backward is
    differentiated).
    """

    differentiable_backward = True
    saved_recomputed = {1: lambda ctx, x, s: np.split(x, 2, axis=ctx.dim)[1].sigmoid()}

    @staticmethod
    def forward(ctx, x, *, dim):
        a, b = np.split(x, 2, axis=dim)
        s = sigmoid_np(b)
        ctx.save_for_backward(x, s)
        ctx.dim = dim
        return a * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        a = np.split(x, 2, axis=ctx.dim)[0]
        da = g * s
        db = da * a * (1 - s)
        return np.concatenate([da, db], axis=ctx.dim)


# ============================================================================ exponential-linear family

class EluFn(ArrayFunction):
    """ELU with torch's three constants (ELU, SELU and CELU are all this one):

        y = scale · x                               (x > 0)
        y = scale · α · (e^{x · input_scale} - 1)   (x <= 0)

    dy/dx = scale for x > 0, scale · α · input_scale · e^{x · input_scale} for x <= 0
    (at 0 the second branch, as torch). ELU: scale = input_scale = 1; SELU: α and scale
    fixed (Klambauer et al.); CELU: scale = 1, input_scale = 1/α. Saved: x.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, alpha, scale, input_scale):
        ctx.save_for_backward(x)
        ctx.consts = alpha, scale, input_scale
        neg = np.expm1(np.minimum(x, 0) * input_scale) * (alpha * scale)
        return np.where(x > 0, x * scale, neg).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        alpha, scale, input_scale = ctx.consts
        neg = np.exp(np.minimum(x, 0) * input_scale) * (alpha * scale * input_scale)
        return g * np.where(x > 0, scale, neg)


# ============================================================================ piecewise linear

class LeakyReluFn(ArrayFunction):
    """y = x (x > 0),  s·x (x <= 0).   dy/dx = 1 (x > 0), s (x <= 0; s at 0, as torch).
    Saved: the mask x > 0."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, slope):
        pos = x > 0
        ctx.save_for_backward(pos)
        ctx.slope = slope
        return np.where(pos, x, x * slope)

    @staticmethod
    def backward(ctx, g):
        (pos,) = ctx.saved_tensors
        return np.where(pos, g, g * ctx.slope)


class HardtanhFn(ArrayFunction):
    """y = clip(x, lo, hi).   dy/dx = 1 for lo < x < hi and 0 elsewhere — 0 *at* the corners
    (torch's choice; ``clamp``'s gradient is 1 there). relu6 is hardtanh(0, 6).
    Saved: the mask lo < x < hi."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, lo, hi):
        ctx.save_for_backward((x > lo) & (x < hi))
        return np.clip(x, lo, hi).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (inside,) = ctx.saved_tensors
        return g * inside


class HardsigmoidFn(ArrayFunction):
    """y = clip(x/6 + 1/2, 0, 1) (= relu6(x + 3)/6).   dy/dx = 1/6 for -3 < x < 3, else 0 —
    with 1/6 rounded to float32 even for float64, as torch's kernel does (a 3e-8 relative
    difference from the exact 1/6). Saved: the mask -3 < x < 3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward((x > -3) & (x < 3))
        return (np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)   # x + 3 first: no cancellation near -3

    @staticmethod
    def backward(ctx, g):
        (inside,) = ctx.saved_tensors
        return g * inside * _ONE_SIXTH_F32


class HardswishFn(ArrayFunction):
    """y = x · relu6(x + 3)/6:  0 (x <= -3),  x (x + 3)/6 (-3 < x < 3),  x (x >= 3).

    dy/dx = 0 (x <= -3),  x/3 + 1/2 (-3 < x < 3),  1 (x >= 3)  — torch's sides at ±3.
    Saved: x.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * np.clip(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        slope = np.where(x <= -3, 0, np.where(x >= 3, 1, x / 3 + 0.5))   # x's dtype (NumPy's scalar rules)
        return g * slope


# ============================================================================ rational and shrink

class SoftsignFn(ArrayFunction):
    """y = x / (1 + |x|).   dy/dx = ((1 + |x|) - x·sign x) / (1 + |x|)² = 1/(1 + |x|)².
    Saved: x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + np.abs(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = 1 + np.abs(x)
        return g / (d * d)


class TanhshrinkFn(ArrayFunction):
    """y = x - tanh x.   dy/dx = 1 - (1 - tanh² x) = tanh² x.

    torch computes tanhshrink as the composite x - tanh(x), so its gradient is the sum of the
    two branches, g - g (1 - tanh² x), rounded as written (it is 0 where tanh² x < ulp(1)/2,
    not the exact g tanh² x); we compute it the same way. The forward is computed in float64
    and rounded once (x - tanh x cancels for small x). Saved: x and tanh x (float64; recomputed
    from x when the backward is differentiated: d²y/dx² = 2 tanh x (1 - tanh² x)).
    """

    differentiable_backward = True
    saved_recomputed = {1: lambda ctx, x, t: x.tanh()}

    @staticmethod
    def forward(ctx, x):
        x64 = x.astype(np.float64)
        t = np.tanh(x64)
        ctx.save_for_backward(x, t)
        return (x64 - t).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        _, t = ctx.saved_tensors
        t = np.astype(t, np.result_type(g))
        return g - g * (1 - t * t)


# ============================================================================ the functions

def silu(input, inplace: bool = False) -> Tensor:
    """x σ(x) (``torch.nn.functional.silu``)."""
    return _in_place_if(inplace, _float_input(input, "silu", inplace), "silu", SiluFn.apply)


def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + e^{βx})/β, and x where βx > threshold (``torch.nn.functional.softplus``)."""
    x = _float_input(input, "softplus")
    return SoftplusFn.apply(x, beta=_number(beta, "softplus", "beta"),
                          threshold=_number(threshold, "softplus", "threshold"))


def mish(input, inplace: bool = False) -> Tensor:
    """x tanh(softplus(x)) (``torch.nn.functional.mish``)."""
    return _in_place_if(inplace, _float_input(input, "mish", inplace), "mish", MishFn.apply)


def logsigmoid(input) -> Tensor:
    """log σ(x), computed without overflow (``torch.nn.functional.logsigmoid``)."""
    return LogSigmoidFn.apply(_float_input(input, "logsigmoid"))


def glu(input, dim: int = -1) -> Tensor:
    """a σ(b) for the halves a, b of ``input`` along ``dim`` (``torch.nn.functional.glu``)."""
    x = _float_input(input, "glu")
    if x.ndim == 0:
        raise InvalidArgumentError("glu: does not support scalars (0-d input) because halving size must be even")
    d = _canonical_dim(dim, x.ndim, "glu")
    if x.shape[d] % 2:
        raise InvalidArgumentError(f"glu: halving dimension must be even, but dimension {dim} of input "
                         f"shape {tuple(x.shape)} has size {x.shape[d]}")
    return GluFn.apply(x, dim=d)


def elu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x (x > 0), α(e^x - 1) (x <= 0) (``torch.nn.functional.elu``)."""
    x = _float_input(input, "elu", inplace)
    alpha = _number(alpha, "elu", "alpha")
    return _in_place_if(inplace, x, "elu", lambda t: EluFn.apply(t, alpha=alpha, scale=1.0, input_scale=1.0))


def selu(input, inplace: bool = False) -> Tensor:
    """scale · elu(x, α) with SELU's fixed α ≈ 1.6733, scale ≈ 1.0507 (``torch.nn.functional.selu``)."""
    x = _float_input(input, "selu", inplace)
    return _in_place_if(inplace, x, "selu",
                        lambda t: EluFn.apply(t, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0))


def celu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, α(e^{x/α} - 1)) (``torch.nn.functional.celu``); α must not be 0."""
    x = _float_input(input, "celu", inplace)
    alpha = _number(alpha, "celu", "alpha")
    if alpha == 0:
        raise InvalidArgumentError("celu: alpha cannot be 0 (CELU divides x by alpha)")
    return _in_place_if(inplace, x, "celu", lambda t: EluFn.apply(t, alpha=alpha, scale=1.0, input_scale=1.0 / alpha))


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x (x > 0), negative_slope · x (x <= 0) (``torch.nn.functional.leaky_relu``)."""
    x = _float_input(input, "leaky_relu", inplace)
    slope = _number(negative_slope, "leaky_relu", "negative_slope")
    return _in_place_if(inplace, x, "leaky_relu", lambda t: LeakyReluFn.apply(t, slope=slope))


def _hardtanh(input, lo, hi, inplace, op):
    if not isinstance(inplace, bool):
        raise TypeError(f"{op}: inplace must be a bool, got {inplace!r}")
    x = as_tensor(input, op, "input")
    if x._data.dtype.kind in "iu":   # torch clamps integer tensors too (no gradient)
        return _in_place_if(inplace, x, op, lambda t: Tensor(np.clip(t._data, lo, hi).astype(t._data.dtype)))
    check_float(op, input=x)
    return _in_place_if(inplace, x, op, lambda t: HardtanhFn.apply(t, lo=lo, hi=hi))


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """clip(x, min_val, max_val), zero gradient at and beyond the corners
    (``torch.nn.functional.hardtanh``)."""
    lo, hi = _number(min_val, "hardtanh", "min_val"), _number(max_val, "hardtanh", "max_val")
    if lo > hi:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val, got min_val={min_val}, "
                         f"max_val={max_val}")
    return _hardtanh(input, lo, hi, inplace, "hardtanh")


def relu6(input, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) = hardtanh(x, 0, 6) (``torch.nn.functional.relu6``)."""
    return _hardtanh(input, 0.0, 6.0, inplace, "relu6")


def hardsigmoid(input, inplace: bool = False) -> Tensor:
    """relu6(x + 3)/6 (``torch.nn.functional.hardsigmoid``)."""
    return _in_place_if(inplace, _float_input(input, "hardsigmoid", inplace), "hardsigmoid", HardsigmoidFn.apply)


def hardswish(input, inplace: bool = False) -> Tensor:
    """x · relu6(x + 3)/6 (``torch.nn.functional.hardswish``)."""
    return _in_place_if(inplace, _float_input(input, "hardswish", inplace), "hardswish", HardswishFn.apply)


def softsign(input) -> Tensor:
    """x / (1 + |x|) (``torch.nn.functional.softsign``; integers computed in float32)."""
    return SoftsignFn.apply(_promoted_input(input, "softsign"))


def tanhshrink(input) -> Tensor:
    """x - tanh(x) (``torch.nn.functional.tanhshrink``; integers computed in float32)."""
    return TanhshrinkFn.apply(_promoted_input(input, "tanhshrink"))
