"""Binary pointwise ops: rounded division and remainders, atan2, hypot, lerp, copysign, xlogy,
float_power, closeness tests, and the bindings of the arithmetic, comparison and logical ops as
Tensor methods and ``tinygrad_tx.NAME`` functions with torch's signatures.

Operands broadcast; backwards return gradients in the broadcast shape and the engine reduces
them (``autograd.reduce_grad_to_input``). Python scalars and dtype promotion follow torch
through tensor.py's ``_binary_op`` (a scalar takes a float tensor's dtype; int with float makes
float32). Integer semantics are torch's: ``//`` floors, ``%`` (remainder) takes the sign of the
divisor, fmod the sign of the dividend, and an integer division by zero raises
:class:`IntegerDivisionByZero` (torch's ``RuntimeError: ZeroDivisionError``).

Notation in the derivations: y = f(a, b), g = dL/dy; the backward returns dL/da and dL/db.
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction
from ..tensor import Tensor, _as_operand, _binary_op, _check_no_bool_sub, comparison_method
from . import elementwise as _E
from .compare import (allclose, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, clamp, clamp_max,
                      clamp_min, equal, isclose, logical)
from .compat import DEPRECATED_FUNCTIONS, undeprecate
from .transcendental import _quiet
from .unary import _function


class IntegerDivisionByZero(ZeroDivisionError, RuntimeError):
    """An integer division, remainder or fmod by zero: a ZeroDivisionError (Python's own) that
    is also a RuntimeError (what torch raises)."""


def _zero_divisor_check(op, a, b):
    """torch raises for an integer division by zero (a float one gives inf or nan)."""
    _E.check_broadcast(op, a, b)
    da, db = np.asarray(a).dtype, np.asarray(b).dtype
    if da == np.bool_ and db == np.bool_:
        raise TypeError(f"{op}: not supported for two bool tensors")
    empty = 0 in np.broadcast_shapes(np.shape(a), np.shape(b))   # divides nothing: torch returns it
    if db.kind in "iub" and da.kind in "iub" and not empty and np.any(np.asarray(b) == 0):
        raise IntegerDivisionByZero(f"{op}: integer division by zero (the divisor has a 0)")


def _floor_div(a, b):
    if np.result_type(a, b) == np.float16:
        return _floor_div_half(a, b)
    with _quiet():
        return np.floor_divide(a, b)


def _floor_div_half(a, b):
    """torch compatibility: ⌊a / b⌋ of float16 tensors as torch's kernel computes it, each step
    rounded to float16 (``c10::div_floor_floating`` on ``Half``): q = (a - fmod(a, b)) / b, one
    less where the remainder's sign differs from b's, then the floor, plus one if more than 0.5
    was cut off. NumPy's float16 ``floor_divide`` rounds only once and differed from torch by a
    whole unit on 38 of 1,000 quotients between 300 and 2,000."""
    h = np.float16
    with _quiet():
        mod = np.fmod(a, b, dtype=h)
        q = np.true_divide(np.subtract(a, mod, dtype=h), b, dtype=h)
        q = np.where((mod != 0) & ((b < 0) != (mod < 0)), np.subtract(q, h(1), dtype=h), q)
        fl = np.floor(q)
        fl = np.where(np.subtract(q, fl, dtype=h) > h(0.5), np.add(fl, h(1), dtype=h), fl)
        return np.where(b == 0, np.true_divide(a, b, dtype=h), fl).astype(h)


def _trunc_div(a, b):
    """a / b rounded towards zero; for integers without going through floats."""
    if np.result_type(a, b).kind in "iu":
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)))
    with _quiet():
        return np.trunc(np.true_divide(a, b))


# ============================================================================ division and remainders

class DivRounded(ArrayFunction):
    """y = a / b rounded towards zero (mode 'trunc') or down (mode 'floor').

    y is piecewise constant in a and b, so dy/da = dy/db = 0: torch returns zero gradients
    (``div(..., rounding_mode=...)``), and so do we."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b, mode="floor", op="div"):
        _zero_divisor_check(op, a, b)
        return _floor_div(a, b) if mode == "floor" else _trunc_div(a, b)

    @staticmethod
    def backward(ctx, g):
        na, nb = ctx.needs_input_grad
        return (np.zeros_like(g) if na else None), (np.zeros_like(g) if nb else None)


class FloorDivide(DivRounded):
    """y = ⌊a / b⌋ (``a // b``, ``floor_divide``). torch defines no derivative for floor_divide
    (its backward raises, though ``div(a, b, rounding_mode='floor')`` has the zero one); we
    raise the same error."""

    @staticmethod
    def forward(ctx, a, b):
        return DivRounded.forward(ctx, a, b, mode="floor", op="floor_divide")

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for floor_divide is not implemented; use "
                           "div(a, b, rounding_mode='floor') for a zero gradient")


class Remainder(ArrayFunction):
    """y = a - b ⌊a/b⌋ (``a % b``, ``remainder``): the sign of the divisor, as Python's %.

    ⌊a/b⌋ is piecewise constant, so dy/da = 1 and dy/db = -⌊a/b⌋ (torch's gradient):
    dL/da = g, dL/db = -g ⌊a/b⌋. Floats are computed as torch does: m = fmod(a, b), then
    m + b where m is non-zero and its sign differs from b's."""

    differentiable_backward = True

    quotient = staticmethod(_floor_div)   # the rounded a/b whose multiple of b is taken away

    @staticmethod
    def forward(ctx, a, b):
        _zero_divisor_check("remainder", a, b)
        if ctx.needs_input_grad[1]:
            ctx.save_for_backward(a, b)
        if np.result_type(a, b).kind in "iu":
            return np.remainder(a, b)
        with _quiet():
            m = np.fmod(a, b)
            return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)

    @classmethod
    def backward(cls, ctx, g):
        na, nb = ctx.needs_input_grad
        gb = None
        if nb:
            a, b = ctx.saved_tensors
            gb = -g * cls.quotient(a, b)
        return (g if na else None), gb


class Fmod(Remainder):
    """y = a - b trunc(a/b) (C's fmod): the sign of the dividend.

    trunc(a/b) is piecewise constant, so dL/da = g and dL/db = -g trunc(a/b) (torch's);
    the backward is Remainder's with trunc in place of floor."""

    quotient = staticmethod(_trunc_div)

    @staticmethod
    def forward(ctx, a, b):
        _zero_divisor_check("fmod", a, b)
        if ctx.needs_input_grad[1]:
            ctx.save_for_backward(a, b)
        with _quiet():
            return np.fmod(a, b)


# ============================================================================ smooth binary ops

class Atan2(ArrayFunction):
    """y = atan2(a, b), the angle of the point (b, a) in (-π, π].

    With r² = a² + b²: dy/da = b / r², dy/db = -a / r² (the derivatives of atan(a/b), valid in
    every quadrant), so dL/da = g b / r² and dL/db = -g a / r². At r² = 0 (the origin) both are
    0, as torch's (not 0/0 = nan)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        _E.check_broadcast("atan2", a, b)
        ctx.save_for_backward(a, b)
        return np.arctan2(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        with _quiet():
            r2 = a * a + b * b
            s = g / r2
        if isinstance(s, (np.ndarray, np.generic)):   # the origin: 0 as torch's (g / 0 * 0 is nan)
            s = np.where(r2 == 0, 0, s)
        return (s * b if na else None), (-s * a if nb else None)


class Hypot(ArrayFunction):
    """y = √(a² + b²) (without overflow).   dy/da = a / y, dy/db = b / y,
    so dL/da = g a / y and dL/db = g b / y."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        _E.check_broadcast("hypot", a, b)
        y = np.hypot(a, b)
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        with _quiet():
            s = g / y
        return (s * a if na else None), (s * b if nb else None)


class Lerp(ArrayFunction):
    """y = start + w (end - start), w a tensor or a Python number.

    dy/dstart = 1 - w, dy/dend = w, dy/dw = end - start, so dL/dstart = g (1 - w),
    dL/dend = g w, dL/dw = g (end - start). The forward is written as torch's:
    start + w (end - start) for |w| < 0.5, else end - (end - start)(1 - w), exact at w = 1."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, start, end, weight):
        ctx.save_for_backward(start, end, weight)   # a Python weight stays exact (1 - w in float64)
        d = end - start
        if not isinstance(weight, np.ndarray):
            return start + weight * d if abs(weight) < 0.5 else end - d * (1 - weight)
        return np.where(np.abs(weight) < 0.5, start + weight * d, end - d * (1 - weight))

    @staticmethod
    def backward(ctx, g):
        start, end, w = ctx.saved_tensors
        ns, ne, nw = ctx.needs_input_grad
        gw = None
        if nw:
            d = end - start
            if isinstance(g, np.ndarray) and g.dtype == np.float32 and np.shape(w) != g.shape:
                # a broadcast weight's gradient is a sum of these products, often with cancellation:
                # products rounded to float32 first made it up to 13x torch's error (0-d w over
                # (4, 4), seed 1); float64 products leave only end - start's rounding, as torch's
                gw = np.multiply(g, d, dtype=np.float64)
            else:
                gw = g * d
        return ((g * (1 - w) if ns else None), (g * w if ne else None), gw)


class Copysign(ArrayFunction):
    """y = |a| with the sign (bit) of b.

    y = a · (y/a) with y/a = ±1 constant between sign changes of a and b, so dy/da = y/a
    (0 where a = 0, as torch) and dy/db = 0 (torch returns zeros for b):
    dL/da = g y/a, dL/db = 0."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b):
        _E.check_broadcast("copysign", a, b)
        y = np.copysign(a, b)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = None
        if na:
            with _quiet():
                ratio = np.where(a == 0, 0, y / a)
            ga = g * ratio
        return ga, (np.zeros_like(g) if nb else None)


def _xlogy(x, y):
    """x log y, 0 where x == 0 (unless y is nan), as torch's xlogy."""
    with _quiet():
        r = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), 0, r)


class Xlogy(ArrayFunction):
    """z = x log y, with z = 0 where x = 0 (so 0 log 0 = 0, the entropy convention).

    dz/dx = log y, dz/dy = x / y. torch's gradient: dL/dx = xlogy(g, y), set to 0 where
    x = 0 and y <= 0 (where log y is -inf or nan); dL/dy = g x / y."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, y):
        _E.check_broadcast("xlogy", x, y)
        ctx.save_for_backward(x, y)
        return _xlogy(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        nx, ny = ctx.needs_input_grad
        gx = gy = None
        if nx:
            gx = np.where((x == 0) & (y <= 0), 0, _xlogy(g, y))
        if ny:
            with _quiet():
                gy = g * x / y
        return gx, gy


# ============================================================================ methods

def _float_binary(cls, tensor_other: bool = False):
    """A method for an op that computes in floating point (the operands' result type; ints
    and bools become float32). ``tensor_other``: torch takes no Python number as ``other``."""
    name = cls.__name__.lower()

    def method(self, other):
        if tensor_other and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__} ({other!r})")
        return _binary_op(cls, self, other, float_result=True)
    method.__name__ = name
    return method


atan2 = _float_binary(Atan2, tensor_other=True)
copysign = _float_binary(Copysign)
xlogy = _float_binary(Xlogy)


def _xlogy_function(input, other):
    """xlogy(input, other): input may be a Python number (torch allows it)."""
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        return _binary_op(Xlogy, _as_operand(input, other), other, float_result=True)
    return _function("xlogy", xlogy)(input, other)


def hypot(self, other):
    """torch's hypot: the operands' result type must be floating (int tensors are refused)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"hypot(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__} ({other!r})")
    from ..core import dtypes
    dt = dtypes.result_np(self, other)
    if dt.kind != "f":
        raise TypeError(f"hypot: floating point tensors only, got dtypes {self._data.dtype} and "
                        f"{other._data.dtype}")
    return _binary_op(Hypot, self, other)


def fmod(self, other):
    return _binary_op(Fmod, self, other)


def remainder(self, other):
    return _binary_op(Remainder, self, other)


def floor_divide(self, other):
    return _binary_op(FloorDivide, self, other)


class _RoundedDiv:
    """An ``apply`` for _binary_op: DivRounded with a fixed mode."""

    __name__ = "DivRounded"   # float16 with a number: torch's opmath, as FloorDivide (tensor._HALF_OPMATH)

    def __init__(self, mode):
        self.mode = mode

    def apply(self, a, b):
        return DivRounded.apply(a, b, mode=self.mode)


_DIV_ROUNDED = {"trunc": _RoundedDiv("trunc"), "floor": _RoundedDiv("floor")}


def div(self, other, *, rounding_mode=None):
    """a / b (true division; ints give float32), or rounded with rounding_mode 'trunc'/'floor'
    (ints stay ints, as torch's)."""
    if rounding_mode is None:
        return _binary_op(_E.Div, self, other, float_result=True)
    op = _DIV_ROUNDED.get(rounding_mode) if isinstance(rounding_mode, str) else None
    if op is None:
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found {rounding_mode!r}")
    return _binary_op(op, self, other)


def true_divide(self, other):
    return div(self, other)


def _to_tensor(x):
    return x if isinstance(x, Tensor) else Tensor(x)


def divmod_(self, other):
    """(a // b, a % b), Python's divmod. (torch's Tensor does not define divmod.)"""
    return floor_divide(self, other), remainder(self, other)


def lerp(self, end, weight):
    end = _to_tensor(_as_operand(end, self))
    if isinstance(weight, Tensor):
        tensors = (self, end, weight)
    elif isinstance(weight, (int, float, np.number)) and not isinstance(weight, bool):
        tensors = (self, end)
        weight = float(weight)
    else:
        raise TypeError(f"lerp: weight must be a Tensor or a number, got {type(weight).__name__}")
    for name, t in zip(("input", "end", "weight"), tensors):
        if t._data.dtype.kind != "f":
            raise TypeError(f"lerp: {name} must be a floating point tensor, got dtype {t._data.dtype}")
        if t._data.dtype != self._data.dtype:
            raise TypeError(f"lerp: expected dtype {self._data.dtype} for {name} but got {t._data.dtype}")
    try:
        np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        raise ValueError(f"lerp: shapes {[t.shape for t in tensors]} are not broadcastable") from None
    return Lerp.apply(self, end, weight)


def float_power(self, exponent):
    """a ** b computed in float64 (the result is float64 whatever the inputs). A composite:
    cast to float64, then Pow -- torch's gradient is that of the same computation, cast back
    to each input's dtype."""
    base = self if isinstance(self, Tensor) else float(self)
    if isinstance(base, Tensor) and base._data.dtype != np.float64:
        base = base.to(np.float64)
    if isinstance(exponent, Tensor):
        if exponent._data.dtype != np.float64:
            exponent = exponent.to(np.float64)
    elif isinstance(exponent, (int, float, np.number)) and not isinstance(exponent, bool):
        exponent = float(exponent)
    else:
        raise TypeError(f"float_power: exponent must be a Tensor or a number, got {type(exponent).__name__}")
    if not isinstance(base, Tensor):
        return exponent.__rpow__(base)
    return base ** exponent


def _alpha_check(op, a, b, alpha):
    ints = all(np.asarray(x._data if isinstance(x, Tensor) else x).dtype.kind in "iub" for x in (a, b))
    if ints and isinstance(alpha, float):
        raise TypeError(f"{op}: for integral input tensors, argument alpha must not be a floating "
                        f"point number, got alpha={alpha}")


class AddScaled(ArrayFunction):
    """y = a + alpha·b, float32 (add and sub with alpha).  dL/da = g, dL/db = alpha·g.

    torch rounds once (a fused multiply-add in float32); a + round(alpha·b) rounds twice, and
    where a ≈ -alpha·b that first rounding is all that is left of the result (float32: 5.7e-6
    relative off, torch exact). So alpha is rounded to float32 as torch's is, the sum is taken in
    float64 (alpha·b exact there) and rounded once: bit for bit torch's on 120,000 cases.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, a, b, *, alpha):
        ctx.alpha = alpha
        dt = np.result_type(a, b)
        scaled = np.multiply(np.float64(np.float32(alpha)), b, dtype=np.float64)
        return _E._binary("add", np.add, np.asarray(a, dtype=np.float64), scaled).astype(dt)

    @staticmethod
    def backward(ctx, g):
        return g, g * ctx.alpha


class _AddScaledBy:
    """An ``apply`` for _binary_op: AddScaled with a fixed alpha."""

    def __init__(self, alpha):
        self.alpha = alpha

    def apply(self, a, b):
        return AddScaled.apply(a, b, alpha=self.alpha)


def _add_scaled(op, self, other, alpha, sign):
    """self + sign·alpha·other in the result type of self and other: torch computes the product in
    that type, so bool + True * 2 stays bool; float32 rounds once (AddScaled)."""
    from ..core import dtypes
    _alpha_check(op, self, other, alpha)
    dt = dtypes.result_np(self, _as_operand(other, self))
    if dt == np.float32:
        return _binary_op(_AddScaledBy(sign * alpha), self, other)
    out = self + other * alpha if sign > 0 else self - other * alpha
    return out if out._data.dtype == dt else out.to(dt)


_OPERANDS = (Tensor, int, float, bool, complex, np.generic, np.ndarray, list, tuple)


def _other_operand(op, other):
    if not isinstance(other, _OPERANDS):
        raise TypeError(f"{op}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")


def add(self, other, *deprecated, alpha=1):
    """self + alpha * other. torch's deprecated ``add(alpha, other)`` (old tutorials'
    ``p.data.add_(-lr, p.grad.data)``) is accepted with torch's warning (``compat.undeprecate``)."""
    if deprecated:
        (other,), kw = undeprecate("add", (other, *deprecated), {"alpha": alpha} if alpha != 1 else {},
                                 strict=True)
        alpha = kw.get("alpha", 1)
    _other_operand("add", other)
    if alpha == 1:
        return self + other
    return _add_scaled("add", self, other, alpha, 1)


def sub(self, other, *deprecated, alpha=1):
    """self - alpha * other (and torch's deprecated ``sub(alpha, other)``, with its warning)."""
    if deprecated:
        (other,), kw = undeprecate("sub", (other, *deprecated), {"alpha": alpha} if alpha != 1 else {},
                                 strict=True)
        alpha = kw.get("alpha", 1)
    _other_operand("sub", other)
    if alpha == 1:
        return self - other
    _check_no_bool_sub(self, other)
    return _add_scaled("sub", self, other, alpha, -1)


def _swap(method):
    """``other <op> self``: a Python number on the left stays a number, ranked below every tensor
    (a 0-d one too) as torch ranks it: ``0 % t`` with a 0-d uint8 t is uint8, ``2.0 % t`` with a
    float16 t is float16 (made a 0-d int64 / float32 tensor first, it won the promotion)."""
    def r(self, other):
        return method(_as_operand(other, self), self)
    return r


TENSOR_METHODS = {
    "fmod": fmod, "remainder": remainder, "__mod__": remainder, "__rmod__": _swap(remainder),
    "floor_divide": floor_divide, "__floordiv__": floor_divide, "__rfloordiv__": _swap(floor_divide),
    "__divmod__": divmod_, "__rdivmod__": _swap(divmod_),
    "atan2": atan2, "arctan2": atan2, "hypot": hypot, "lerp": lerp, "copysign": copysign,
    "xlogy": xlogy, "div": div, "divide": div, "true_divide": true_divide, "float_power": float_power,
    "isclose": isclose, "allclose": allclose, "equal": equal,
    "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "add": add, "sub": sub, "subtract": sub, "multiply": lambda self, other: _binary_op(_E.Mul, self, other),
    "greater": comparison_method("greater", np.greater), "greater_equal": comparison_method("greater_equal", np.greater_equal),
    "less": comparison_method("less", np.less), "less_equal": comparison_method("less_equal", np.less_equal),
    "not_equal": comparison_method("not_equal", np.not_equal),
    "logical_and": logical(np.logical_and), "logical_or": logical(np.logical_or),
    "logical_xor": logical(np.logical_xor),
    "bitwise_not": bitwise_not, "__invert__": bitwise_not, "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
    "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
    # & | ^ commute: other & self is self & other (a number on the left ranked as on the right)
    "__rand__": bitwise_and, "__ror__": bitwise_or, "__rxor__": bitwise_xor,
}
# tensor.py's div had no rounding_mode, add/sub no integer alpha check, clamp no tensor bounds,
# and & | ^ ~ were logical for ints (torch's are bitwise) with NumPy's error for floats
# (__ror__ is seen as bound only because ``type`` defines it, for ``Tensor | None``)
REPLACES = {"clamp", "clip", "__and__", "__or__", "__xor__", "__invert__", "__ror__"}


def pow(input, exponent):
    """input ** exponent; input may be a Python number when exponent is a Tensor."""
    if isinstance(input, Tensor):
        return input ** exponent
    if isinstance(exponent, Tensor):
        return exponent.__rpow__(input)
    raise TypeError(f"pow(): expected a Tensor argument, got {type(input).__name__} and "
                    f"{type(exponent).__name__}")


def _remainder_function(input, other):
    """remainder(input, other): input may be a Python number (torch allows it)."""
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        return _swap(remainder)(other, input)
    return _function("remainder", remainder)(input, other)


def _number_first(name, method):
    """tinygrad_tx.NAME(input, other): as torch's add/sub/mul/div/bitwise ops, ``input`` may be a
    Python number when ``other`` is a Tensor (ranked below it, as in ``3 * t``)."""
    checked = _function(name, method)
    reflected = TENSOR_METHODS.get(f"__r{name.removeprefix('bitwise_')}__") if name.startswith("bitwise_") else None

    def fn(input, other, *deprecated, **kwargs):
        if deprecated and name in DEPRECATED_FUNCTIONS:   # torch.add(input, alpha, other): deprecated, warned
            (other,), kwargs = undeprecate(name, (other, *deprecated), kwargs, function=True, strict=True)
        elif deprecated:
            raise TypeError(f"{name}() takes 2 positional arguments but {2 + len(deprecated)} were given")
        if isinstance(other, Tensor) and isinstance(input, (bool, int, float, np.number)):
            return reflected(other, input) if reflected else method(input, other, **kwargs)
        return checked(input, other, **kwargs)
    fn.__name__ = name
    return fn


FUNCTIONS = {name: _function(name, m) for name, m in TENSOR_METHODS.items() if not name.startswith("__")}
FUNCTIONS.update({name: _number_first(name, TENSOR_METHODS[name])
                  for name in ("add", "sub", "subtract", "div", "divide", "multiply", "true_divide",
                               "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor")})
FUNCTIONS.update({
    "remainder": _remainder_function, "float_power": float_power, "pow": pow, "xlogy": _xlogy_function,
    "mul": FUNCTIONS["multiply"], "eq": _function("eq", Tensor.eq),
    **{name: _function(name, getattr(Tensor, name)) for name in ("ne", "lt", "le", "gt", "ge")},
})
