"""Unary pointwise ops: abs and sign, rounding, predicates, nan_to_num, and the bindings of every
unary op (the smooth ones live in ``ops/transcendental.py``) as Tensor methods and
``tinygrad_tx.NAME`` functions with torch's signatures.

dtype rules, as torch's: float math (sin, exp2, erf, ...) of an int or bool tensor computes
in float32; abs, neg, sign, square, floor/ceil/round/trunc keep integer dtypes (square of bool
is int64); predicates (isnan, signbit, ...) return bool and have no gradient.

Zero-gradient ops: sign, floor, ceil, round and trunc are piecewise constant, so dy/dx = 0
wherever it exists; torch returns that zero gradient (not None), and so do we.
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction
from ..tensor import Tensor, _adopt, _floating
from . import elementwise as _E
from . import transcendental as _T


def _tensor_arg(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    return x


def _reject_bool(x, op, what):
    if x._data.dtype == np.bool_:
        raise TypeError(f"{op}: {what} is not supported on a bool tensor")


# ============================================================================ abs, sign, neg

def _sign(x):
    """-1, 0 or 1, and 0 for nan (torch's sign; NumPy's gives nan)."""
    s = np.sign(x)
    if np.result_type(s).kind == "f":
        s = np.where(np.isnan(s), 0, s)
    return s


class Abs(ArrayFunction):
    """y = |x|.   dy/dx = sign x (-1, 0 or 1): torch uses 0 at the kink x = 0 (and at nan), as
    we do, so dL/dx = g sign x."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _sign(x)


class _PiecewiseConstant(ArrayFunction):
    """y = f(x) with f constant between jumps (sign, floor, ceil, round, trunc): dy/dx = 0
    everywhere it is defined, so dL/dx = 0 -- a zero array, as torch returns, not None."""

    differentiable_backward = True

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


class Sign(_PiecewiseConstant):
    """y = sign x: -1, 0 or 1 (and 0 for nan, as torch's). Zero gradient (see _PiecewiseConstant)."""

    @staticmethod
    def forward(ctx, x):
        return x.copy() if x.dtype == np.bool_ else _sign(x)


class Floor(_PiecewiseConstant):
    """y = ⌊x⌋, the largest integer <= x. Zero gradient."""

    @staticmethod
    def forward(ctx, x):
        return np.floor(x)


class Ceil(_PiecewiseConstant):
    """y = ⌈x⌉, the smallest integer >= x. Zero gradient."""

    @staticmethod
    def forward(ctx, x):
        return np.ceil(x)


class Trunc(_PiecewiseConstant):
    """y = x with its fractional part dropped (rounds towards zero). Zero gradient."""

    @staticmethod
    def forward(ctx, x):
        return np.trunc(x)


class Round(_PiecewiseConstant):
    """y = x rounded to ``decimals`` decimal places, halves to even (torch's nearbyint):
    round(0.5) = 0, round(1.5) = 2, round(2.5) = 2. As torch computes it:
    decimals > 0: rint(x · 10^d) / 10^d;  decimals < 0: rint(x / 10^-d) · 10^-d, the power of
    ten in x's dtype. Zero gradient."""

    @staticmethod
    def forward(ctx, x, decimals=0):
        if decimals == 0:
            return np.rint(x)
        with np.errstate(over="ignore", invalid="ignore"):
            if decimals > 0:
                p = np.asarray(10.0 ** decimals, dtype=x.dtype)
                return np.rint(x * p) / p
            p = np.asarray(10.0 ** -decimals, dtype=x.dtype)
            return np.rint(x / p) * p


class Frac(ArrayFunction):
    """y = x - trunc(x), the fractional part (sign of x). trunc has zero derivative, so
    dy/dx = 1 and dL/dx = g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):   # frac(±inf) = nan, as torch's
            return x - np.trunc(x)

    @staticmethod
    def backward(ctx, g):
        return g


class NanToNum(ArrayFunction):
    """y = x with nan, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (the
    defaults are 0 and the dtype's largest and smallest finite values, as torch's).

    Where x is finite y = x (dy/dx = 1); elsewhere y is a constant (dy/dx = 0), so
    dL/dx = g where x is finite and 0 where it was replaced -- torch's gradient."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, nan=0.0, posinf=None, neginf=None):
        if x.dtype.kind != "f":
            return x.copy()
        ctx.save_for_backward(np.isfinite(x))
        return np.nan_to_num(x, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, g):
        (finite,) = ctx.saved_tensors
        return np.where(finite, g, 0)


# ============================================================================ the methods

def _float_math(cls):
    """A method applying ``cls`` in floating point (int and bool inputs compute in float32)."""
    def method(self):
        return cls.apply(_floating(self))
    method.__name__ = cls.__name__.lower()
    method.__doc__ = cls.__doc__
    return method


def abs_(self):
    _reject_bool(self, "abs", "abs")
    return Abs.apply(self)


def sign(self):
    return Sign.apply(self)


def neg(self):
    if self._data.dtype == np.bool_:
        raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return _E.Neg.apply(self)


def positive(self):
    """+x: the tensor itself, as torch returns it."""
    _reject_bool(self, "positive", "the `+` operator")
    return self


def square(self):
    return _T.Square.apply(_adopt(self._data.astype(np.int64)) if self._data.dtype == np.bool_ else self)


def _rounding(cls, name):
    def method(self):
        if self._data.dtype.kind in "iu":
            return _adopt(self._data.copy())
        _reject_bool(self, name, name)
        return cls.apply(self)
    method.__name__ = name
    return method


floor, ceil, trunc = _rounding(Floor, "floor"), _rounding(Ceil, "ceil"), _rounding(Trunc, "trunc")


def round_(self, decimals=0):
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    if self._data.dtype.kind in "iub":
        if decimals != 0 or self._data.dtype == np.bool_:
            raise TypeError(f"round: decimals={decimals} is not supported for dtype {self._data.dtype}")
        return _adopt(self._data.copy())
    return Round.apply(self, decimals=int(decimals))


def frac(self):
    if self._data.dtype.kind not in "fc":
        raise TypeError(f"frac: not supported for dtype {self._data.dtype} (floating point only)")
    return Frac.apply(self)


def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    for arg, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not isinstance(v, (int, float, np.number)):
            raise TypeError(f"nan_to_num: {arg} must be a number or None, got {v!r}")
    return NanToNum.apply(self, nan=nan, posinf=posinf, neginf=neginf)


def logit(self, eps=None):
    if eps is not None and not isinstance(eps, (int, float, np.floating)):
        raise TypeError(f"logit: eps must be a float or None, got {eps!r}")
    return _T.Logit.apply(_floating(self), eps=None if eps is None else float(eps))


def _predicate(npfn, name):
    """A bool-valued test with no gradient (isnan, isinf, signbit, ...)."""
    def method(self):
        x = self._data
        if x.dtype == np.bool_:
            return _adopt(npfn(x.astype(np.int8)))
        return _adopt(npfn(x))
    method.__name__ = name
    return method


def _signbit(x):
    return np.signbit(x) if x.dtype.kind == "f" else x < 0


isnan = _predicate(np.isnan, "isnan")
isinf = _predicate(np.isinf, "isinf")
isfinite = _predicate(np.isfinite, "isfinite")
isposinf = _predicate(np.isposinf, "isposinf")
isneginf = _predicate(np.isneginf, "isneginf")
signbit = _predicate(_signbit, "signbit")

_FLOAT_MATH = {
    "sin": _T.Sin, "cos": _T.Cos, "tan": _T.Tan, "asin": _T.Asin, "acos": _T.Acos, "atan": _T.Atan,
    "sinh": _T.Sinh, "cosh": _T.Cosh, "asinh": _T.Asinh, "acosh": _T.Acosh, "atanh": _T.Atanh,
    "log1p": _T.Log1p, "expm1": _T.Expm1, "log2": _T.Log2, "log10": _T.Log10, "exp2": _T.Exp2,
    "rsqrt": _T.Rsqrt, "reciprocal": _T.Reciprocal, "erf": _T.Erf, "erfc": _T.Erfc,
    "erfinv": _T.Erfinv, "sinc": _T.Sinc,
}
_ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "absolute": "abs", "negative": "neg",
            "fix": "trunc", "sgn": "sign"}

TENSOR_METHODS = {name: _float_math(cls) for name, cls in _FLOAT_MATH.items()}
TENSOR_METHODS.update({
    "abs": abs_, "__abs__": abs_, "sign": sign, "neg": neg, "__neg__": neg, "positive": positive,
    "__pos__": positive, "square": square, "floor": floor, "ceil": ceil, "trunc": trunc,
    "round": round_, "frac": frac, "nan_to_num": nan_to_num, "logit": logit,
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite, "isposinf": isposinf,
    "isneginf": isneginf, "signbit": signbit,
})
TENSOR_METHODS.update({alias: TENSOR_METHODS[name] for alias, name in _ALIASES.items()})
REPLACES = {"neg", "__neg__"}   # tensor.py's versions let NumPy's error for bool tensors through


# ============================================================================ the functions

def _function(name, method):
    def fn(input, *args, **kwargs):
        return method(_tensor_arg(input, name), *args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = method.__doc__
    fn.__wrapped__ = method   # (_bind.py: the signature, and the method named as this function)
    return fn


def _method_function(name):
    """tinygrad_tx.NAME(input, ...) for a method tensor.py already defines (exp, log, ...)."""
    def fn(input, *args, **kwargs):
        return getattr(_tensor_arg(input, name), name)(*args, **kwargs)
    fn.__name__ = name
    return fn


FUNCTIONS = {name: _function(name, m) for name, m in TENSOR_METHODS.items() if not name.startswith("__")}
FUNCTIONS.update({name: _method_function(name)
                  for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "relu", "logical_not")})
