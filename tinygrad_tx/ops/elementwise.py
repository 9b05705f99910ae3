"""Elementwise ops: arithmetic, pointwise math, activations, and selection.

Every op here may broadcast its inputs. Backwards return gradients in the
broadcast (output) shape; the engine (``autograd.reduce_grad_to_input``) sums
them back to each input's shape, so no op here deals with broadcasting.

Notation in the derivations: ``y = f(x)`` is the forward, ``g = dL/dy`` the
incoming gradient, and the backward returns ``dL/dx = g * dy/dx`` (pointwise).
"""
from __future__ import annotations

import math

import numpy as np

from .. import buffers, kernels
from ..core.function import ArrayFunction
from .normal import gelu_float32

from scipy.special import erf as _erf   # GeluClosedForm's Φ, written as the derivation has it
from scipy.special import erfc as _erfc   # exact GELU: SciPy's is vectorised and accurate to the last ulp

# Python floats, not NumPy float64 scalars: under NumPy 2's promotion a float64 scalar times a
# float32 array is a float64 array, which would run a float32 op silently in float64
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_INV_SQRT_2 = float(1.0 / np.sqrt(2.0))
_INV_SQRT_2PI = float(1.0 / np.sqrt(2.0 * np.pi))
_C = math.sqrt(2 / math.pi)                              # GeluClosedForm's constants (Python floats too)
_SQRT_2, _SQRT_2PI = math.sqrt(2), math.sqrt(2 * math.pi)


def _broadcast_error(op, a, b):
    return ValueError(f"{op}: shapes {np.shape(a)} and {np.shape(b)} are not broadcastable "
                      f"(trailing dimensions must be equal or 1)")


def check_broadcast(op, a, b):
    """Our ValueError naming both shapes, instead of NumPy's, when a and b do not broadcast."""
    if np.shape(a) != np.shape(b):
        try:
            np.broadcast_shapes(np.shape(a), np.shape(b))
        except ValueError:
            raise _broadcast_error(op, a, b) from None


def _pooled_out(fn, a, b):
    """A pooled output (``buffers.empty``) for a ufunc of two C-contiguous float arrays of one dtype
    whose result is at least ``buffers.MIN_BYTES`` and has the larger one's shape (a residual
    add, a bias, a scale); None otherwise (NumPy allocates, as in the plain ``fn(a, b)``)."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype or a.dtype.kind != "f":
        return None
    big, small = (a, b) if a.size >= b.size else (b, a)
    if big.nbytes < buffers.MIN_BYTES or not (big.flags.c_contiguous and small.flags.c_contiguous) \
            or small.ndim > big.ndim or not isinstance(fn, np.ufunc):
        return None
    if any(s != 1 and s != t for s, t in zip(small.shape[::-1], big.shape)):
        return None
    return buffers.empty(big.shape, big.dtype)


def _binary(op, fn, a, b):
    try:
        out = _pooled_out(fn, a, b)
        return fn(a, b) if out is None else fn(a, b, out=out)
    except ValueError:
        check_broadcast(op, a, b)   # the shapes' fault: our error; otherwise NumPy's stands
        raise


# ============================================================================ arithmetic

class Add(ArrayFunction):
    """y = a + b.   dy/da = 1, dy/db = 1, so dL/da = g and dL/db = g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        return _binary("add", np.add, a, b)

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(ArrayFunction):
    """y = a - b.   dL/da = g, dL/db = -g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        return _binary("sub", np.subtract, a, b)

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


class Mul(ArrayFunction):
    """y = a * b.   dy/da = b, dy/db = a, so dL/da = g*b and dL/db = g*a."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        return _binary("mul", np.multiply, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (g * b if na else None), (g * a if nb else None)


class Div(ArrayFunction):
    """y = a / b.   dy/da = 1/b, dy/db = -a/b^2 = -y/b,
    so dL/da = g/b and dL/db = -g*y/b (reusing the output saves recomputing a/b)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        y = _binary("div", np.true_divide, a, b)
        ctx.save_for_backward(b, y if ctx.needs_input_grad[1] else None)
        return y

    @staticmethod
    def backward(ctx, g):
        b, y = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = g / b if na else None
        gb = -g * y / b if nb else None
        return ga, gb


class Neg(ArrayFunction):
    """y = -x.   dL/dx = -g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        return np.negative(x)

    @staticmethod
    def backward(ctx, g):
        return -g


def _cube(x):
    """x³ as x·x·x. Why: NumPy's float32 ``x ** 3`` calls powf per element: (512, 256) float32
    19 ms against 0.025 ms (one thread, 2026-12-03)."""
    return x * x * x


_POWER_BY_PRODUCTS = (np.dtype(np.float32), np.dtype(np.float64))   # float16's power rounds once, as torch's


def _scalar_power(a, e):
    """a ** e for a float array a and a scalar e, by multiplication where e is 3 or 4 (NumPy
    already special-cases 2, 0.5, -1 and 1; 3 and 4 go to powf per element, ~750x slower: see
    ``_cube``); ``np.power`` otherwise, and always for a Tensor (a differentiated backward)."""
    if isinstance(a, np.ndarray) and a.dtype in _POWER_BY_PRODUCTS and isinstance(e, (int, float, np.number, np.ndarray)) \
            and np.ndim(e) == 0:
        if e == 3:
            return _cube(a)
        if e == 4:
            sq = a * a
            return sq * sq
    return np.power(a, e)


def _power(a, b):
    """a ** b; integer and bool operands (one dtype after promotion) follow torch's integer
    pow: a negative exponent gives 1 for base 1, ±1 for base -1 and 0 otherwise (NumPy
    refuses it), and bool ** bool stays bool (NumPy makes int8)."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.dtype.kind not in "biu" or b_arr.dtype.kind not in "biu":
        return _scalar_power(a, b)
    neg = b_arr < 0
    if neg.any():
        y = np.power(a_arr, np.where(neg, 0, b_arr).astype(b_arr.dtype))
        odd = (b_arr % 2) != 0
        y = np.where(neg, np.where(a_arr == 1, 1, np.where(a_arr == -1, np.where(odd, -1, 1), 0)), y)
    else:
        y = np.power(a_arr, b_arr)
    return y.astype(np.result_type(a_arr.dtype, b_arr.dtype), copy=False)


class Pow(ArrayFunction):
    """y = a ** b for tensor a and tensor-or-scalar b.

    dy/da = b * a^(b-1); where b == 0 the derivative is 0 (also at a == 0,
    where a^(b-1) is inf), as torch defines it.
    dy/db = a^b * log(a) = y * log(a); torch sets it to 0 where a == 0 and
    b >= 0 (the limit of a^b log a as a -> 0+), which avoids 0 * -inf = nan.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        y = kernels.pow_int(a, b)                  # an integer exponent: one C pass (docs/kernels.md)
        if y is None:
            y = _binary("pow", _power, a, b)
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = gb = None
        if na:
            ga = kernels.pow_int_backward(a, b, g)
        if na and ga is None:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = b * _scalar_power(a, b - 1)
            ga = g * np.where(b == 0, 0, d)
        if nb:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = y * np.log(a)
            gb = g * np.where((a == 0) & (b >= 0), 0, d)
        return ga, gb


# ============================================================================ pointwise math

class Exp(ArrayFunction):
    """y = e^x.   dy/dx = e^x = y, so dL/dx = g*y (save the output, not the input)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class Log(ArrayFunction):
    """y = ln x.   dy/dx = 1/x, so dL/dx = g/x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with np.errstate(divide="ignore"):
            return g / x


class Sqrt(ArrayFunction):
    """y = sqrt(x).   dy/dx = 1/(2 sqrt x) = 1/(2y), so dL/dx = g/(2y)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):
            y = np.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        with np.errstate(divide="ignore"):
            return g / (2 * y)


class TanhFn(ArrayFunction):
    """y = tanh x.   dy/dx = 1 - tanh^2 x = 1 - y^2 = (1 - y)(1 + y), so dL/dx = g*(1 - y)(1 + y).

    Near saturation (|y| -> 1) the derivative is a small difference, so one ulp of error in y
    is a large relative error in it: y must be correctly rounded and the difference taken
    without a further rounding. NumPy's float32 tanh is 1 ulp off on a third of normal inputs
    (torch's on 1%), so float32 is computed in float64 and rounded (1.7 ms per million
    elements more); 1 - y is exact for y in [1/2, 1] (as is 1 + y on the negative side), where
    1 - y*y would round y*y first. Measured on 3,000 drawn float32 inputs: our gradient's error
    against a float64 oracle at most 1.0x torch's (was up to 48x, 0.7% of draws over 4x).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x, dtype=np.float64).astype(np.float32) if x.dtype == np.float32 else np.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * ((1 - y) * (1 + y))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """1/(1+e^-x) in three in-place passes, and e^x/(1+e^x) where e^-x overflowed (x < -80,
    rare). Why: against the branch-free e = e^-|x|, where(x >= 0, 1, e)/(1+e) (eight passes,
    five temporaries): (512, 256) float32, one thread, 1.02 -> 0.10 ms (2026-12-03)."""
    y = np.empty_like(x)             # (np.negative of a 0-d array would be a NumPy scalar)
    np.negative(x, out=y)
    with np.errstate(over="ignore"):
        np.exp(y, out=y)
    y += 1
    np.reciprocal(y, out=y)
    if x.size and np.min(x) < -80:
        far = x < -80
        e = np.exp(x[far])
        y[far] = e / (1 + e)
    return y


class SigmoidFn(ArrayFunction):
    """y = 1/(1+e^-x).   dy/dx = e^-x/(1+e^-x)^2 = y(1-y), so dL/dx = g*y*(1-y).

    Forward: 1/(1+e^-x) keeps full relative precision for the tiny outputs of x << 0 (where
    1 + tanh(x/2) would cancel to 0) until e^-x overflows, below x ≈ -88 in float32; there
    y = e^x/(1+e^x), the same value (``_sigmoid``).

    Where a C compiler is found, ``kernels.sigmoid`` / ``sigmoid_backward`` run each direction as
    one C pass (the same formulas; the backward reads the saved y, as torch's does).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = kernels.sigmoid(x)                     # one C pass (docs/kernels.md), else NumPy
        if y is None:
            y = _sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if type(y) is np.ndarray and type(g) is np.ndarray:
            dx = kernels.sigmoid_backward(y, g)
            if dx is not None:
                return dx
        return g * y * (1 - y)


class ReluFn(ArrayFunction):
    """y = max(x, 0).   dy/dx = 1 where x > 0 and 0 where x < 0 (torch uses 0 at x == 0).

    At x = NaN, y = NaN and torch passes the gradient through (its rule is "0 where
    y <= 0, else g", and NaN <= 0 is false), so the mask is ``~(y <= 0)``, not ``y > 0``.
    The output carries the same information as x, so it is what we save."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = np.maximum(x, 0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * ~(y <= 0)


def _gelu_with_derivative(x: np.ndarray, approximate: str, need_d: bool):
    """``(y, dy/dx or None)`` of GELU, the derivative computed in the forward from the same
    Φ (or tanh u) as y. Why: Φ (erf) is the expensive part of both; sharing it rather than
    recomputing it in the backward: exact, (2048, 256) float64, forward + derivative
    18.1 -> 10.7 ms (1.7x), one thread, medians, 2026-12-02. float32 exact GELU goes to
    ``ops.normal.gelu_float32`` (a fitted Φ, block by block, ~10x faster than SciPy's erf).

    Where a C compiler is found, ``kernels.gelu`` computes both in one pass instead (the NumPy
    code below stays as the reference and the fallback). Gain: (512, 256) float32 exact,
    forward + backward, one thread, CPU time 1169 -> 462 µs (torch 540; docs/kernels.md)."""
    fast = kernels.gelu(x, approximate, need_d)
    if fast is not None:
        return fast
    if approximate == "tanh":
        u = _SQRT_2_OVER_PI * (x + 0.044715 * _cube(x))
        # t correctly rounded and 1 - t² as (1 - t)(1 + t), as in Tanh: NumPy's float32 tanh is
        # up to an ulp off, which 1 - t² amplifies where t is near ±1 (gradient 7x torch's error)
        t = np.tanh(u, dtype=np.float64).astype(np.float32) if u.dtype == np.float32 else np.tanh(u)
        y = 0.5 * x * (1 + t)
        d = 0.5 * (1 + t) + 0.5 * x * ((1 - t) * (1 + t)) * (_SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)) \
            if need_d else None
        return y, d
    if x.dtype == np.float32:
        return gelu_float32(x, need_d)
    # x² → inf gives φ = 0 (right); ±inf inputs give nan, as in torch.
    # Φ(x) = erfc(-x/√2)/2, not (1 + erf(x/√2))/2: the latter cancels in the left tail (erf near -1),
    # so torch's float64 GELU is 1e-10 off at x = -6, 2% at -8 and 0 below -8.3; erfc keeps every digit
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        cdf = 0.5 * _erfc(-x * _INV_SQRT_2)
        y = x * cdf
        d = cdf + x * (_INV_SQRT_2PI * np.exp(-0.5 * x * x)) if need_d else None
    return y, d


class GeluClosedForm(ArrayFunction):
    """GELU, exact or with torch's tanh approximation.

    Exact (approximate='none'): y = x Φ(x), Φ(x) = (1 + erf(x/√2))/2 the normal CDF;
        dy/dx = Φ(x) + x φ(x),  φ(x) = e^{-x²/2}/√(2π) the normal density
        (d/dx Φ = φ, product rule).
    Tanh (approximate='tanh'): y = x/2 (1 + tanh u),  u = √(2/π)(x + 0.044715 x³);
        dy/dx = (1 + tanh u)/2 + x/2 (1 - tanh² u) du/dx,  du/dx = √(2/π)(1 + 3·0.044715 x²).
    dL/dx = g · dy/dx. Saved: x.
    """

    @staticmethod
    def forward(ctx, x, *, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if approximate == "tanh":
            return x / 2 * (1 + np.tanh(_C * (x + 0.044715 * x ** 3)))
        return x * (1 + _erf(x / _SQRT_2)) / 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            t = np.tanh(_C * (x + 0.044715 * x ** 3))
            return g * ((1 + t) / 2 + x / 2 * (1 - t * t) * _C * (1 + 3 * 0.044715 * x * x))
        return g * ((1 + _erf(x / _SQRT_2)) / 2 + x * np.exp(-x * x / 2) / _SQRT_2PI)


class GeluFn(ArrayFunction):
    """GELU, exact or with torch's tanh approximation, fused.
    Derivation: ``GeluClosedForm`` (above, ops/elementwise.py).

    Φ(x) is computed as erfc(-x/√2)/2: the same number as (1 + erf(x/√2))/2 without the
    cancellation near x → -∞. dy/dx shares its expensive parts with y (Φ and φ, or tanh u),
    so when a gradient will be needed the forward computes it alongside y and saves it
    (one array of x's size, as saving x would be; ``_gelu_with_derivative``); the
    backward is then dL/dx = g · dy/dx, one multiply. The plain form saves x and recomputes
    Φ in the backward; gradients of gradients (``create_graph=True``) go through it, for which
    x is kept too.

    float32 exact GELU is computed in float32 by ``ops.normal.gelu_float32``
    (a fitted approximation of Φ accurate to 1e-8, block by block, ~10x faster
    than SciPy's float64 erf); other dtypes use SciPy's erfc (float64: exact to
    the last ulp, which the float64 gradient checks rely on).
    """

    @staticmethod
    def forward(ctx, x, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        need_d = bool(ctx.needs_input_grad[0])
        y, d = _gelu_with_derivative(x, approximate, need_d)
        if need_d:   # x too, for gradients of gradients (closed_form_call): as torch's gelu saves x
            ctx.save_for_backward(d.astype(x.dtype, copy=False), x)
            ctx.approximate = approximate
        return y.astype(x.dtype, copy=False)

    twice_differentiable_via = GeluClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_call(ctx, x, *constants):
        return (x,), {"approximate": ctx.approximate}

    @staticmethod
    def backward(ctx, g):
        d, _ = ctx.saved_tensors
        return g * d


# ============================================================================ selection

class Where(ArrayFunction):
    """y = where(c, a, b): a where c is true, b elsewhere. c is not differentiable.

    dL/da = g where c, 0 elsewhere; dL/db = g where not c, 0 elsewhere."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, cond, a, b):
        cond = np.asarray(cond)
        if cond.dtype != np.bool_:
            raise TypeError(f"where: condition must be a bool tensor, got dtype {cond.dtype}")
        try:
            np.broadcast_shapes(cond.shape, np.shape(a), np.shape(b))
        except ValueError:
            raise ValueError(f"where: condition {tuple(cond.shape)}, input {np.shape(a)} and other "
                             f"{np.shape(b)} are not broadcastable") from None
        ctx.save_for_backward(cond)
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        _, na, nb = ctx.needs_input_grad
        return (None,
                np.where(cond, g, 0) if na else None,
                np.where(cond, 0, g) if nb else None)


class MaskedFill(ArrayFunction):
    """y = x with ``value`` written where mask is true (mask broadcasts against x).

    dL/dx = g where the mask is false, 0 where it was overwritten."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, mask, value):
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got dtype {mask.dtype}")
        try:
            if np.broadcast_shapes(x.shape, mask.shape) != x.shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast "
                             f"to the input's shape {tuple(x.shape)}") from None
        ctx.save_for_backward(mask)
        return np.where(mask, np.asarray(value, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return np.where(mask, 0, g), None, None


class Clamp(ArrayFunction):
    """y = min(max(x, lo), hi).  dy/dx = 1 where lo <= x <= hi (inclusive, as torch), else 0."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, min=None, max=None):
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must be given")
        keep = np.ones(x.shape, dtype=bool)
        y = x
        if min is not None:
            keep &= x >= min
            y = np.maximum(y, np.asarray(min, dtype=x.dtype))
        if max is not None:
            keep &= x <= max
            y = np.minimum(y, np.asarray(max, dtype=x.dtype))
        ctx.save_for_backward(keep)
        return y

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g * keep


def _max_share(g, a, b, a_loses):
    """The part of g that a receives in max/min (``a_loses``: where b wins outright): 0
    where a loses, g/2 at ties, g elsewhere -- elsewhere includes a NaN on either side, where
    neither compares smaller, so both inputs receive g, as torch's masked_fill rule gives."""
    return np.where(a_loses, 0, np.where(a == b, g * 0.5, g))


class Maximum(ArrayFunction):
    """y = max(a, b) elementwise.

    dL/da = g where a > b, dL/db = g where b > a; at ties torch splits the
    gradient evenly (g/2 to each), and so do we. torch's rule is "g, halved where a == b,
    zeroed where a < b" for a (and mirrored for b), so where a or b is NaN (no comparison
    holds) each receives the whole g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("maximum", np.maximum, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (_max_share(g, a, b, a < b) if na else None), \
            (_max_share(g, b, a, b < a) if nb else None)


class Minimum(ArrayFunction):
    """y = min(a, b) elementwise; the mirror image of Maximum (ties split evenly, a NaN
    on either side passes g to both)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("minimum", np.minimum, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (_max_share(g, a, b, a > b) if na else None), \
            (_max_share(g, b, a, b > a) if nb else None)


# ============================================================================ casts and copies

class Cast(ArrayFunction):
    """y = x converted to ``dtype``.  dL/dx = g converted back to x's dtype (the engine
    casts every gradient to its input's dtype, so the backward is the identity)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dtype):
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g


class Clone(ArrayFunction):
    """y = a copy of x.  dL/dx = g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        return buffers.copy(x)   # into a pooled array (no fresh pages at every step); tiled if x is transposed

    @staticmethod
    def backward(ctx, g):
        return g
