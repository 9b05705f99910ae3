"""Smooth pointwise math: trigonometric, hyperbolic, exponential/logarithmic and error functions.

Every op is y = f(x) applied elementwise, so the backward is dL/dx = g * f'(x) with
g = dL/dy. Where f'(x) is cheaper to write with the output (exp2, tan, rsqrt, erfinv...)
the forward saves y instead of x. The Tensor methods and ``tinygrad_tx.sin``-style
functions that call these Functions are bound in ``ops/unary.py``.

Inputs outside an op's domain give NaN (asin(2), log2(-1)) and poles give ±inf, as in
torch; NumPy's warnings for them are silenced.
"""
from __future__ import annotations

import numpy as np
from scipy.special import erf as _erf
from scipy.special import erfc as _erfc
from scipy.special import erfinv as _erfinv

from .. import kernels
from ..core.function import ArrayFunction

_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))
_TWO_OVER_SQRT_PI = float(2.0 / np.sqrt(np.pi))
_SQRT_PI_OVER_2 = float(np.sqrt(np.pi) / 2.0)


def _quiet():
    """Silence NumPy's warnings for out-of-domain inputs and poles (torch gives nan/inf quietly)."""
    return np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore")


def _const(c, like):
    """A float constant in the dtype of ``like`` (keeps float32 math in float32; ``like`` may be
    an array or, in a backward being differentiated, a Tensor)."""
    return np.asarray(c, dtype=np.result_type(like))


# ============================================================================ trigonometric

class Sin(ArrayFunction):
    """y = sin x.   dy/dx = cos x, so dL/dx = g cos x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * np.cos(x)


class Cos(ArrayFunction):
    """y = cos x.   dy/dx = -sin x, so dL/dx = -g sin x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.cos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * np.sin(x)


class Tan(ArrayFunction):
    """y = tan x.   dy/dx = 1/cos² x = 1 + tan² x = 1 + y², so dL/dx = g (1 + y²)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with _quiet():
            y = np.tan(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 + y * y)


class Asin(ArrayFunction):
    """y = asin x (|x| <= 1).   x = sin y, dx/dy = cos y = √(1 - x²), so dL/dx = g / √(1 - x²)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.arcsin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / np.sqrt(1 - x * x)


class Acos(ArrayFunction):
    """y = acos x = π/2 - asin x, so dL/dx = -g / √(1 - x²)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.arccos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return -g / np.sqrt(1 - x * x)


class Atan(ArrayFunction):
    """y = atan x.   x = tan y, dx/dy = 1 + tan² y = 1 + x², so dL/dx = g / (1 + x²)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arctan(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1 + x * x)


# ============================================================================ hyperbolic

class Sinh(ArrayFunction):
    """y = sinh x = (eˣ - e⁻ˣ)/2.   dy/dx = cosh x, so dL/dx = g cosh x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.sinh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g * np.cosh(x)


class Cosh(ArrayFunction):
    """y = cosh x = (eˣ + e⁻ˣ)/2.   dy/dx = sinh x, so dL/dx = g sinh x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.cosh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g * np.sinh(x)


class Asinh(ArrayFunction):
    """y = asinh x.   x = sinh y, dx/dy = cosh y = √(1 + x²), so dL/dx = g / √(x² + 1)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arcsinh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / np.sqrt(x * x + 1)


class Acosh(ArrayFunction):
    """y = acosh x (x >= 1).   x = cosh y, dx/dy = sinh y = √(x² - 1), so dL/dx = g / √(x² - 1)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.arccosh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / np.sqrt(x * x - 1)


class Atanh(ArrayFunction):
    """y = atanh x (|x| < 1).   x = tanh y, dx/dy = 1 - tanh² y = 1 - x², so dL/dx = g / (1 - x²)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.arctanh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / (1 - x * x)


# ============================================================================ exponential and logarithmic

class Log1p(ArrayFunction):
    """y = ln(1 + x), accurate for tiny x.   dy/dx = 1/(1 + x), so dL/dx = g / (1 + x)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.log1p(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / (1 + x)


class Expm1(ArrayFunction):
    """y = eˣ - 1, accurate for tiny x.   dy/dx = eˣ = y + 1, so dL/dx = g (y + 1)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with _quiet():
            y = np.expm1(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y + 1)


class Log2(ArrayFunction):
    """y = log₂ x = ln x / ln 2.   dy/dx = 1/(x ln 2), so dL/dx = g / (x ln 2)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.log2(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / (x * _const(_LN2, x))


class Log10(ArrayFunction):
    """y = log₁₀ x = ln x / ln 10.   dy/dx = 1/(x ln 10), so dL/dx = g / (x ln 10)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.log10(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with _quiet():
            return g / (x * _const(_LN10, x))


class Exp2(ArrayFunction):
    """y = 2ˣ = e^(x ln 2).   dy/dx = 2ˣ ln 2 = y ln 2, so dL/dx = g y ln 2."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with _quiet():
            y = np.exp2(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * _const(_LN2, y)


class Rsqrt(ArrayFunction):
    """y = 1/√x = x^(-1/2).   dy/dx = -½ x^(-3/2) = -½ y³, so dL/dx = -½ g y³."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with _quiet():
            y = 1 / np.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        with _quiet():
            return -0.5 * g * (y * y * y)


class Reciprocal(ArrayFunction):
    """y = 1/x.   dy/dx = -1/x² = -y², so dL/dx = -g y²."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with _quiet():
            y = np.reciprocal(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        with _quiet():
            return -g * (y * y)


class Square(ArrayFunction):
    """y = x².   dy/dx = 2x, so dL/dx = 2 g x. (Integer inputs stay integers, as in torch.)"""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _quiet():
            return np.square(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


# ============================================================================ error functions

class Erf(ArrayFunction):
    """y = erf x = 2/√π ∫₀ˣ e^(-t²) dt.   dy/dx = 2/√π e^(-x²), so dL/dx = g 2/√π e^(-x²).

    Where a C compiler is found, ``kernels.erf`` / ``erf_backward`` run each direction as one C
    pass (libmvec's vector erf; the backward the same formula in the same order)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y = kernels.erf(x) if type(x) is np.ndarray else None   # one C pass (docs/kernels.md)
        if y is not None:
            return y
        return np.asarray(_erf(x)).astype(x.dtype, copy=False)   # SciPy widens float16

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if type(x) is np.ndarray and type(g) is np.ndarray:
            dx = kernels.erf_backward(x, g)
            if dx is not None:
                return dx
        with _quiet():
            return g * (_const(_TWO_OVER_SQRT_PI, x) * np.exp(-(x * x)))


class Erfc(ArrayFunction):
    """y = erfc x = 1 - erf x (accurate where erf x is near 1).   dL/dx = -g 2/√π e^(-x²).

    Where a C compiler is found, ``kernels.erfc`` / ``erfc_backward`` run each direction as one C
    pass (libmvec's vector erfc; the backward the same formula in the same order)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y = kernels.erfc(x) if type(x) is np.ndarray else None   # one C pass (docs/kernels.md)
        if y is not None:
            return y
        return np.asarray(_erfc(x)).astype(x.dtype, copy=False)   # SciPy widens float16

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if type(x) is np.ndarray and type(g) is np.ndarray:
            dx = kernels.erfc_backward(x, g)
            if dx is not None:
                return dx
        with _quiet():
            return -g * (_const(_TWO_OVER_SQRT_PI, x) * np.exp(-(x * x)))


class Erfinv(ArrayFunction):
    """y = erf⁻¹ x (|x| < 1).   x = erf y, dx/dy = 2/√π e^(-y²), so
    dL/dx = g / (dx/dy) = g √π/2 e^(y²) (the output is what the derivative needs)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = np.copysign(_erfinv(x), x)   # erfinv is odd: keeps erfinv(-0) = -0, as torch's
        y = np.asarray(y).astype(x.dtype, copy=False)   # SciPy widens float16
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        with _quiet():
            return g * (_const(_SQRT_PI_OVER_2, y) * np.exp(y * y))


# ============================================================================ logit and sinc

class Logit(ArrayFunction):
    """y = logit x = ln(x / (1 - x)), the inverse of the sigmoid; with ``eps`` the input is
    first clamped to [eps, 1 - eps] (torch's option, to keep y finite).

    dy/dx = 1/x + 1/(1 - x) = 1/(x (1 - x)), so dL/dx = g / (x (1 - x)).
    With eps, x outside [eps, 1 - eps] was clamped to a constant: dL/dx = 0 there.
    Without eps, x outside [0, 1] gives y = nan and dL/dx = nan, and x = 0 or 1 gives
    dL/dx = g · inf, as torch's.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, eps=None):
        ctx.save_for_backward(x)
        ctx.eps = eps
        z = x if eps is None else np.clip(x, _const(eps, x), _const(1 - eps, x))
        with _quiet():
            return np.log(z / (1 - z))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        eps = ctx.eps
        if eps is None:   # at x = 0 or 1 (even -0.0): g / +0, so g·inf
            with _quiet():
                d = g / np.where((x == 0) | (x == 1), 0, x * (1 - x))
            return np.where((x < 0) | (x > 1), _const(np.nan, x), d)
        with _quiet():
            d = g / (x * (1 - x))
        outside = (x < _const(eps, x)) | (x > _const(1 - eps, x))
        return np.where(outside, 0, d)


class Sinc(ArrayFunction):
    """y = sin(πx)/(πx), with y(0) = 1 (the limit), the normalised sinc.

    Quotient rule with t = πx: dy/dx = π (t cos t - sin t)/t² = (t cos t - sin t)/(π x²);
    at x = 0 the limit is 0. dL/dx = g dy/dx.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        t = _const(np.pi, x) * x
        with _quiet():
            return np.where(x == 0, np.ones((), dtype=t.dtype), np.sin(t) / t)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if isinstance(x, np.ndarray) and x.dtype in (np.float16, np.float32):
            return g * _sinc_derivative(x.astype(np.float64)).astype(x.dtype)   # see _sinc_derivative
        return g * _sinc_derivative(x)


def _sinc_derivative(x):
    """dy/dx = (t cos t - sin t)/(π x²), t = πx, and 0 at x = 0. For small |x| the numerator
    cancels (it is about -t³/3), so a float32 input is evaluated in float64 and rounded once
    (``Sinc.backward``): at x = 0.0673 the float32 formula was 67 ulps off (torch's, the same
    formula with other sin/cos roundings, 13)."""
    pi = _const(np.pi, x)
    t = pi * x
    with _quiet():
        d = (t * np.cos(t) - np.sin(t)) / (pi * x * x)
    return np.where(x == 0, 0, d)
